package jsonfile

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/internal/sysmem"
)

type cfg struct {
	Seed  int     `json:"seed"`
	Step  float64 `json:"step"`
	Count uint8   `json:"count"`
	Train struct {
		Steps int `json:"steps"`
	} `json:"train"`
}

// Each refusal names what is wrong; a byte-order mark is skipped.
func TestDecode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"seed": 1, "train": {"steps": 2}}`, ""},
		{"\uFEFF{\"seed\": 1}", ""},
		{`{"seed": 1, "seed": 2}`, `field "seed" given twice`},
		{`{"train": {"steps": 1, "steps": 2}}`, `field "train.steps" given twice`},
		{`{"seed": 1} {}`, "after the JSON object"},
		{``, "empty"},
		{`null`, `starts with "null", want a JSON object`},
		{`[1]`, "want a JSON object"},
		{`{"seeds": 1}`, `unknown field "seeds" (at seeds)`},
		{`{"train": {"epochs": 1}}`, `unknown field "epochs" (at train.epochs)`},
		{`{"seed": "x"}`, "field seed: string, want an integer"},
		{`{"train": {"steps": 1.5}}`, "field train.steps: number 1.5, want an integer"},
		{`{"step": 1e400}`, "field step: number 1e400 is outside float64's range, want a number of magnitude at most 1.798e+308"},
		{`{"step": -1e309}`, "field step: number -1e309 is outside float64's range"},
		{`{"seed": 1e30}`, "field seed: number 1e30 is outside the field's range, want an integer, at most 9223372036854775807"},
		{`{"count": 300}`, "field count: number 300 is outside the field's range, want an integer ≥ 0, at most 255"},
		{`{"train": {"steps": 10.0}}`, "field train.steps: number 10.0 is not written as an integer: want 10"},
		{`{"seed": 1e3}`, "field seed: number 1e3 is not written as an integer: want 1000"},
		{`{"count": 2.55e2}`, "field count: number 2.55e2 is not written as an integer: want 255"},
		{`{"count": 2.56e2}`, "field count: number 2.56e2 is outside the field's range, want an integer ≥ 0, at most 255"},
		{`{"count": -1.0}`, "field count: number -1.0 is outside the field's range"},
		{`{"step": 1e300}`, ""},
		{`{"train": {"steps": -0}}`, "field train.steps is -0, a negative zero: want an integer without a sign"},
		{`{"seed": -0}`, "field seed is -0"},
		{`{"count": -0}`, "field count: number -0, a negative zero: want an integer without a sign"}, // unsigned (probe 31)
		{`{"step": -0}`, ""}, // a float's -0 is a value
		{`{"seed": -0.0}`, "field seed: number -0.0 is not written as an integer: want 0"},
		{`{"step": -0.0, "seed": 0}`, ""},
		{`{"seed": 1`, "the file ends at line 1 inside an object or array: a } or ] is missing (unexpected EOF)"},
		{`{"seed": 1, "SEED": 7}`, `field "SEED" given twice (as "seed" and "SEED")`},
		{`{"seed": 1, "ſeed": 7}`, `given twice (as "seed" and "ſeed")`},
		{`{"a": [x]}`, "invalid character 'x'"},
		// Round 116 B3: each column was one past the character at fault,
		// and the slips were said in Go's terms only.
		{`{"train": {"steps": [1, oops]}}`, "near line 1, column 25: invalid character 'o'"},
		{"{\n  \"seed\": 1,\n  \"data_size\": NaN\n}", "near line 3, column 16: invalid character 'N' looking for beginning of value (NaN and Infinity are not JSON numbers"},
		{"{\n  \"seed\": \"x\"\n}", "near line 2, column 13: field seed: string, want an integer"},
		{"{\n  \"seed\": 1,,\n}", "near line 2, column 13: invalid character ',' looking for beginning of object key string (two commas in a row)"},
		{"{\n  \"seed\": 1,\n}", "near line 3, column 1: invalid character '}' looking for beginning of object key string (a comma before this }: JSON takes none after the last element)"},
		{`{"train": {"steps": [1, 2,]}}`, "column 27: invalid character ']' looking for beginning of value (a comma before this ]"},
		{`{"seed": 'x'}`, "(JSON strings take double quotes)"},
		{`{"x": "日本語", 'bad': 1}`, "near line 1, column 14: invalid character '\\''"}, // round 117 B2: characters, not bytes (20)
		{`{"seed": null}`, ""},
		{"{\n\t\"train\": {\"steps\": -ü}\n}", "near line 2, column 22: invalid character 'ü' in numeric literal"},               // round 118 B6: 'Ã'
		{`{"train": {"lr": 1e999}}`, `unknown field "lr" (at train.lr); want one of steps`},                                      // round 118 B7: no place
		{"\xff\xfe{\x00}\x00", "UTF-16 (byte-order mark FF FE or FE FF), want UTF-8: convert it, with iconv -f UTF-16 -t UTF-8"}, // round 117 B4
		// Round 116 B2: an unknown field named no expected value.
		{`{"train": {"epochs": 1}}`, `unknown field "epochs" (at train.epochs); want one of steps`},
		{`{"seeds": 1}`, `unknown field "seeds" (at seeds); want one of seed, `},
		{`{"a": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, "nested more than"},
	} {
		var v cfg
		err := Decode([]byte(c.in), &v, Options{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%.30q: %v", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%.30q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// Round 119 B8: a number beyond an integer field's given range is refused
// naming that range, whether or not it fits Go's int; numbers in it, and
// fields without a range, are as before.
func TestDecodeIntRanges(t *testing.T) {
	opt := Options{IntRanges: map[string]IntRange{"train.steps": {Min: 2, Max: 1000, Unset: "the default 200"}}}
	for _, c := range []struct{ in, want string }{
		{`{"train": {"steps": 1e20}}`, "field train.steps: number 1e20 is outside the field's range, want an integer in 2..1000 (unset: the default 200)"},
		{`{"train": {"steps": 1e18}}`, "want an integer in 2..1000"},
		{`{"train": {"steps": -1e30}}`, "want an integer in 2..1000"},
		{`{"train": {"steps": 1e3}}`, "is not written as an integer: want 1000"},
		{`{"train": {"steps": 1000}}`, ""},
		{`{"seed": 1e20}`, "at most 9223372036854775807"},
		{`{"seed": -1e20}`, "want an integer, at least -9223372036854775808"}, // round 123 B1: "at most …"
	} {
		var v cfg
		err := Decode([]byte(c.in), &v, opt)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"seed": 1, "train": {"steps": 2}}`))
	f.Add([]byte(`{"seed": 1, "seed": 2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v cfg
		_ = Decode(b, &v, Options{})
		var m map[string]any
		_ = Decode(b, &m, Options{AllowUnknown: true})
	})
}

// A JSON file larger than the limit is refused from its size, before it is
// read (round-12 probe: a 1 GiB config.json or metrics.json cost 2.2 GB of
// memory before its error).
func TestReadRefusesHugeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(DefaultMaxBytes + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	var v map[string]any
	err = Read(path, &v, Options{})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "want at most") {
		t.Errorf("got %v, want a refusal naming the file and the limit", err)
	}
	small := filepath.Join(t.TempDir(), "small.json")
	if err := os.WriteFile(small, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Read(small, &v, Options{MaxBytes: 4}); err == nil {
		t.Error("an 8-byte file read under a 4-byte limit")
	}
	if err := Read(small, &v, Options{}); err != nil || v["a"] != 1.0 {
		t.Errorf("small file: %v, %v", v, err)
	}
}

// Probe 29: a 20 KB file of 10000 nested brackets took gigabytes to walk
// (each level copied the keys and path above it), and a file of 10^6
// numbers in an unknown field was decoded into a map to say where the
// field stands. Each is refused with a heap that grows by a small multiple
// of the file (16 ×, plus 1 MB), a bound that does not depend on time:
// the old walk grew it by 1.2 GB for the first (measured).
func TestDecodeMemoryFollowsFileSize(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte(`{"a": ` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`), "nested more than 100 deep"},
		{[]byte(`{"a": {"b": {"zz": [` + strings.Repeat("0,", 1_000_000) + `0]}}, "seed": 1}`), `unknown field "a" (at a)`},
		{[]byte(`{"seed": 1, "zz": [` + strings.Repeat("0,", 1_000_000) + `0]}`), `unknown field "zz" (at zz)`},
		// Probe 30: each -0 kept its path and keys, 99 deep here: gigabytes.
		{[]byte(`{"a": ` + strings.Repeat("[", 99) + strings.Repeat("-0,", 600_000) + "-0" + strings.Repeat("]", 99) + `}`), `unknown field "a" (at a)`},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var v cfg
		err := Decode(c.in, &v, Options{})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.30q: %v, want %q", c.in, err, c.want)
		}
		if grown, bound := int64(after.HeapSys)-int64(before.HeapSys), int64(16*len(c.in)+1<<20); grown > bound {
			t.Errorf("%.30q (%d bytes): the heap grew by %d bytes, want at most %d", c.in, len(c.in), grown, bound)
		}
		t.Logf("%d bytes: heap grew %d", len(c.in), int64(after.HeapSys)-int64(before.HeapSys))
	}
}

// Probe 30: a 16 MiB bound refused a checkpoint's window.json of 45 MB
// and a seeds.json of 17 MB that flowebm wrote itself (5,000 modes); the
// default bound reads them.
func TestReadsLargeFilesFlowebmWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "window.json")
	b := []byte(`{"seed": 1, "series": [` + strings.Repeat("0.25,", 9_000_000) + `0]}`) // 45 MB
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var v cfg
	if err := Read(path, &v, Options{AllowUnknown: true}); err != nil || v.Seed != 1 {
		t.Errorf("%d bytes: %v", len(b), err)
	}
}

// Probe 31: [{}, {}, …] decoded into a slice of large structs needs far
// more memory than the file's size (a 39 MB window.json aborted the
// process under ulimit -v 4000000): refused before decoding, by an
// estimate from the target's types. Here 400 elements of 16 MiB each, in
// a file of 1.2 KB (401 values with the list): 6.25 GiB decoded, 12.5 GiB
// with the slice's growth, over the limit (at most 8 GiB). Rows of floats
// are counted at 8 bytes a float (probe 32: thrice that, and a 109 MB
// window.json that train wrote was refused under ulimit -v).
func TestDecodeRefusesWhatWouldNotFit(t *testing.T) {
	var v struct {
		Series []struct {
			Values [1 << 21]float64 `json:"values"`
		} `json:"series"`
	}
	b := []byte(`{"series": [` + strings.Repeat("{},", 399) + `{}]}`)
	err := Decode(b, &v, Options{})
	if err == nil || !strings.Contains(err.Error(), "its 401 values would take about 12.5 GiB of memory to decode (") {
		t.Errorf("%v", err)
	}
	var rows struct {
		Series [][]float64 `json:"series"`
	}
	row := "[" + strings.Repeat("0.25,", 99) + "0.25]"
	big := []byte(`{"series": [` + strings.Repeat(row+",", 39_999) + row + `]}`) // 20 MB, 4M floats
	w, err := noDuplicateKeys(big, reflect.TypeOf(&rows))
	if err != nil || w.cost > 2*float64(len(big)) {
		t.Errorf("rows of floats: %v, decoded estimate %s for a file of %s (each float 8 bytes, its text 5)", err, sysmem.Bytes(w.cost), sysmem.Bytes(float64(len(big))))
	}
	var small struct {
		Series []struct {
			Values [4]float64 `json:"values"`
		} `json:"series"`
	}
	if err := Decode(b, &small, Options{}); err != nil || len(small.Series) != 400 {
		t.Errorf("400 small elements: %v", err)
	}
}

// Probe 33: a file of zeros (2 bytes each, 8 once decoded) that would not
// fit was let through by a test of inflation (decoded > 4× the file), and
// aborted the process out of memory. Here 1M zeros against a limit of
// 16 MiB: about 19 MiB needed.
func TestDecodeRefusesZerosThatWouldNotFit(t *testing.T) {
	var v struct {
		Series []float64 `json:"series"`
	}
	b := []byte(`{"series": [` + strings.Repeat("0,", 999_999) + `0]}`)
	err := Decode(b, &v, Options{MaxMemory: 16 << 20})
	if err == nil || !strings.Contains(err.Error(), "its 1000001 values would take about 19.1 MiB of memory to decode") {
		t.Errorf("%v", err)
	}
	if err := Decode(b, &v, Options{MaxMemory: 32 << 20}); err != nil || len(v.Series) != 1_000_000 {
		t.Errorf("under a limit it fits: %v", err)
	}
}
