package checkpoint

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flowebm/flowebm/io/npy"
	"gorgonia.org/tensor"
)

// saved returns a folder holding a saved checkpoint of models(t, dt), its
// spec.json and its weights.npz.
func saved(t testing.TB, dt tensor.Dtype) (dir string, spec, weights []byte) {
	var tt *testing.T
	if x, ok := t.(*testing.T); ok {
		tt = x
	} else {
		tt = &testing.T{}
	}
	dir = filepath.Join(t.TempDir(), "ck")
	if err := Save(dir, models(tt, dt)); err != nil {
		t.Fatal(err)
	}
	spec, _ = os.ReadFile(filepath.Join(dir, "spec.json"))
	weights, _ = os.ReadFile(filepath.Join(dir, "weights.npz"))
	return dir, spec, weights
}

// writeCk writes spec and weights into a fresh folder.
func writeCk(t testing.TB, spec, weights []byte) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.npz"), weights, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// editSpec decodes spec.json into a generic map, applies edit and encodes it.
func editSpec(t *testing.T, spec []byte, edit func(m map[string]any)) []byte {
	var m map[string]any
	if err := json.Unmarshal(spec, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadErr loads dir, failing the test on a panic or success, and returns
// the error's text.
func loadErr(t *testing.T, name, dir string) string {
	t.Helper()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s: Load panicked: %v", name, r)
			}
		}()
		_, _, err = Load(dir)
	}()
	if err == nil {
		t.Errorf("%s: loaded without error", name)
		return ""
	}
	return err.Error()
}

func wantIn(t *testing.T, name, msg string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: error %q does not contain %q", name, msg, s)
		}
	}
}

// A spec whose sizes are each allowed but whose product is 2^40 weights is
// refused with the computed parameter count before anything is allocated
// (it used to abort out of memory).
func TestLoadRefusesHugeParameterCount(t *testing.T) {
	_, spec, weights := saved(t, tensor.Float64)
	cases := []struct {
		name string
		edit func(m map[string]any)
		want []string
	}{
		{"ebm 2^40", func(m map[string]any) {
			m["ebm"].(map[string]any)["sizes"] = []int{2, 1 << 20, 1 << 20, 1}
			delete(m, "flow")
		}, []string{`"ebm.sizes"`, "1099516870657 parameters", "268435456"}},
		{"flow 2^40", func(m map[string]any) {
			m["flow"].(map[string]any)["hidden"] = []int{1 << 20, 1 << 20}
		}, []string{`"flow.hidden"`, fmt.Sprint(4 * 2 * (2*(1<<20) + 1<<20 + (1<<40 + 1<<20) + 2*(1<<20) + 2)), "flow parameters"}},
		{"flow blocks", func(m map[string]any) {
			f := m["flow"].(map[string]any)
			f["hidden"] = []int{4096, 4096}
			f["blocks"] = 1024
		}, []string{`"flow.blocks" 1024`, "flow parameters"}},
		{"ebm+flow together", func(m map[string]any) {
			m["ebm"].(map[string]any)["sizes"] = []int{2, 8192, 16384, 1}
			m["flow"].(map[string]any)["hidden"] = []int{4096, 4096}
		}, []string{`"ebm" and "flow"`, "parameters in all"}},
	}
	for _, c := range cases {
		dir := writeCk(t, editSpec(t, spec, c.edit), weights)
		msg := loadErr(t, c.name, dir)
		wantIn(t, c.name, msg, append(c.want, filepath.Join(dir, "spec.json"))...)
	}
	var s Spec
	json.Unmarshal(spec, &s)
	n, err := s.ParamCount()
	if want := 2*32 + 32 + 32*64 + 64 + 64*64 + 64 + 64*64 + 64 + 64 + 1 + 4*2*(2*8+8+8*2+2); err != nil || n != want {
		t.Errorf("ParamCount = %d, %v, want %d", n, err, want)
	}
}

// weightsWith saves models(dt) with one value of one parameter replaced.
func weightsWith(t *testing.T, dt tensor.Dtype, prefix, param string, index int, v float64) string {
	m := models(t, dt)
	p := m.EBM.Params
	if prefix == "flow." {
		p = m.Flow.Params
	}
	q := p.Get(param)
	vals := q.Float64s()
	vals[index] = v
	if err := q.SetFloat64s(vals); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	if err := Save(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// NaN and ±Inf weights are refused naming the file, the member and the
// index of the first non-finite value (they used to load silently).
func TestLoadRefusesNonFiniteWeights(t *testing.T) {
	cases := []struct {
		dt            tensor.Dtype
		prefix, param string
		index         int
		v             float64
		want          string
	}{
		{tensor.Float64, "ebm.", "net.2.weight", 37, math.NaN(), "index 37 [1, 5]"},
		{tensor.Float64, "flow.", "couplings.1.t.0.bias", 3, math.Inf(1), "index 3,"},
		{tensor.Float32, "ebm.", "net.0.bias", 0, math.Inf(-1), "index 0,"},
		{tensor.Float32, "flow.", "couplings.0.s.1.weight", 15, math.NaN(), "index 15 [1, 7]"},
	}
	for _, c := range cases {
		dir := weightsWith(t, c.dt, c.prefix, c.param, c.index, c.v)
		name := fmt.Sprintf("%v %s%s[%d] = %v", c.dt, c.prefix, c.param, c.index, c.v)
		msg := loadErr(t, name, dir)
		wantIn(t, name, msg, filepath.Join(dir, "weights.npz"), `"`+c.prefix+c.param+`"`, c.want, fmt.Sprint(c.v))
	}
}

// Absurd spec.json values are refused, naming the file and the field,
// without a panic and without allocating in proportion to them.
func TestLoadRefusesAbsurdSpecs(t *testing.T) {
	_, spec, weights := saved(t, tensor.Float64)
	ebm := func(k string, v any) func(map[string]any) {
		return func(m map[string]any) { m["ebm"].(map[string]any)[k] = v }
	}
	flow := func(k string, v any) func(map[string]any) {
		return func(m map[string]any) { m["flow"].(map[string]any)[k] = v }
	}
	long := strings.Repeat("x", 1<<20)
	deep := make([]int, 2000)
	for i := range deep {
		deep[i] = 1
	}
	cases := []struct {
		name string
		edit func(map[string]any)
		want []string
	}{
		{"ebm size 0", ebm("sizes", []int{2, 0, 1}), []string{`"ebm.sizes"`, "has 0 at index 1"}},
		{"ebm size negative", ebm("sizes", []int{2, -32, 1}), []string{`"ebm.sizes"`, "-32"}},
		{"ebm size 2^21", ebm("sizes", []int{2, 1 << 21, 1}), []string{`"ebm.sizes"`, "2097152", "1..2^20"}},
		{"ebm no output", ebm("sizes", []int{2, 32}), []string{`"ebm.sizes"`, "ending in 1"}},
		{"ebm one size", ebm("sizes", []int{1}), []string{`"ebm.sizes"`}},
		{"ebm empty sizes", ebm("sizes", []int{}), []string{`"ebm.sizes"`}},
		{"ebm null sizes", ebm("sizes", nil), []string{`"ebm.sizes"`}},
		{"ebm 2000 layers", ebm("sizes", deep), []string{`"ebm.sizes"`, "1999 layers", "at most 1024"}},
		{"ebm activation unknown", ebm("activation", "gelu"), []string{`"ebm.activation"`, "gelu"}},
		{"ebm activation NaN slope", ebm("activation", "leaky_relu(nan)"), []string{`"ebm.activation"`, "finite"}},
		{"ebm activation 1 MiB", ebm("activation", long), []string{`"ebm.activation"`, "1048576 bytes", "at most 256"}},
		{"ebm name 1 MiB", ebm("name", long), []string{`"ebm.name"`, "1048576 bytes"}},
		{"ebm layout unknown", ebm("layout", "dict"), []string{`"ebm.layout"`}},
		{"ebm unknown field", ebm("depth", 3), []string{`"depth"`}},
		{"ebm sizes a string", ebm("sizes", "2,32,1"), []string{"ebm.sizes"}},
		{"ebm size fractional", ebm("sizes", []float64{2, 32.5, 1}), []string{"ebm.sizes"}},
		{"ebm size 2^70", ebm("sizes", []float64{2, 1e21, 1}), []string{"ebm.sizes"}},
		{"base_sigma short", func(m map[string]any) { m["base_sigma"] = []float64{1} }, []string{`"base_sigma"`, "want 2"}},
		{"base_sigma zero", func(m map[string]any) { m["base_sigma"] = []float64{1, 0} }, []string{`"base_sigma"`}},
		{"base_sigma negative", func(m map[string]any) { m["base_sigma"] = []float64{-1, 1} }, []string{`"base_sigma"`}},
		{"base_sigma subnormal", func(m map[string]any) { m["base_sigma"] = []float64{5e-324, 5e-324} }, []string{`"base_sigma" has 5e-324 at index 0`, "want σ in [1e-150, 1e150]"}},
		{"base_sigma 1e151", func(m map[string]any) { m["base_sigma"] = []float64{1, 1e151} }, []string{`"base_sigma" has 1e+151 at index 1`}},
		{"dtype", func(m map[string]any) { m["dtype"] = "int8" }, []string{`"dtype"`, "int8"}},
		{"format 1 MiB", func(m map[string]any) { m["format"] = long }, []string{`"format"`, "…"}},
		{"standardization scale 0", func(m map[string]any) {
			m["standardization"] = map[string]any{"shift": []float64{0, 0}, "scale": []float64{1, 0}}
		}, []string{`"standardization"`}},
		{"standardization short", func(m map[string]any) {
			m["standardization"] = map[string]any{"shift": []float64{0}, "scale": []float64{1}}
		}, []string{`"standardization"`, "want 2"}},
		{"point_shape one axis", func(m map[string]any) { m["point_shape"] = []int{2} }, []string{`"point_shape" has 1 sizes`, "want 2 to 63"}},
		{"point_shape product", func(m map[string]any) { m["point_shape"] = []int{2, 2} }, []string{`"point_shape" is [2 2]`, "product is 2"}},
		{"point_shape zero", func(m map[string]any) { m["point_shape"] = []int{0, 2} }, []string{`"point_shape" is [0 2]`, "sizes in 1..2"}},
		{"point_shape huge", func(m map[string]any) { m["point_shape"] = []float64{1e9, 1e9, 1e9} }, []string{`"point_shape" is [1000000000`}},
		{"flow dim disagrees", flow("dim", 3), []string{`"flow.dim"`, "want 2"}},
		{"flow blocks 0", flow("blocks", 0), []string{`"flow.blocks"`, "is 0"}},
		{"flow blocks 2^31", flow("blocks", 1<<31), []string{`"flow.blocks"`, "2147483648"}},
		{"flow block_depth -1", flow("block_depth", -1), []string{`"flow.block_depth"`, "-1"}},
		{"flow blocks×depth", func(m map[string]any) {
			f := m["flow"].(map[string]any)
			f["blocks"], f["block_depth"] = 1024, 1024
		}, []string{`"flow.blocks" 1024`, `"flow.block_depth" 1024`, "linear layers per pass"}},
		{"flow hidden 0", flow("hidden", []int{8, 0}), []string{`"flow.hidden"`, "has 0 at index 1"}},
		{"flow hidden 2^30", flow("hidden", []int{1 << 30}), []string{`"flow.hidden"`, "1073741824"}},
		{"flow hidden 2000 widths", flow("hidden", deep), []string{`"flow.hidden"`, "2000 widths"}},
		{"flow activation unknown", flow("activation", "swish"), []string{`"flow.activation"`, "swish"}},
		{"flow mask unknown", flow("mask", "stripes"), []string{`"flow.mask"`, "stripes"}},
		{"flow mask 1 MiB", flow("mask", long), []string{`"flow.mask"`, "1048576 bytes"}},
		{"flow checkerboard2d width 0", flow("mask", "checkerboard2d"), []string{`"flow.mask_width"`, "is 0"}},
		{"flow checkerboard2d width -2", func(m map[string]any) {
			f := m["flow"].(map[string]any)
			f["mask"], f["mask_width"] = "checkerboard2d", -2
		}, []string{`"flow.mask_width"`, "-2"}},
		{"flow a number", func(m map[string]any) { m["flow"] = 3 }, []string{"flow"}},
		{"ebm missing", func(m map[string]any) { delete(m, "ebm") }, []string{`"ebm.sizes"`}},
	}
	for _, c := range cases {
		dir := writeCk(t, editSpec(t, spec, c.edit), weights)
		msg := loadErr(t, c.name, dir)
		wantIn(t, c.name, msg, append(c.want, filepath.Join(dir, "spec.json"))...)
		if len(msg) > 2000 {
			t.Errorf("%s: error of %d bytes", c.name, len(msg))
		}
	}

	// spec.json that is not one JSON object.
	raw := []struct {
		name, spec string
		want       []string
	}{
		{"array", `[` + string(spec) + `]`, []string{"want a JSON object", "found \"["}},
		{"empty", ``, []string{"want a JSON object", "found nothing"}},
		{"null", `null`, []string{"want a JSON object"}},
		{"string", `"flowebm"`, []string{"want a JSON object"}},
		{"trailing garbage", string(spec) + `garbage`, []string{"unexpected \"garbage\" after the JSON object"}},
		{"two objects", string(spec) + string(spec), []string{"after the JSON object"}},
		{"truncated", string(spec[:len(spec)/2]), []string{"unexpected EOF"}},
		{"deeply nested", `{"ebm": ` + strings.Repeat(`{"sizes": `, 100000) + `1` + strings.Repeat(`}`, 100000) + `}`, []string{"spec.json"}},
		{"deeply nested arrays", `{"base_sigma": ` + strings.Repeat(`[`, 1<<20), []string{"spec.json"}},
	}
	for _, c := range raw {
		dir := writeCk(t, []byte(c.spec), weights)
		msg := loadErr(t, c.name, dir)
		wantIn(t, c.name, msg, append(c.want, filepath.Join(dir, "spec.json"))...)
		if len(msg) > 2000 {
			t.Errorf("%s: error of %d bytes", c.name, len(msg))
		}
	}
}

// npyBytes encodes a .npy file with the given descr, shape and raw data.
func npyBytes(descr string, shape []int, data []byte) []byte {
	sh := ""
	for _, v := range shape {
		sh += fmt.Sprintf("%d, ", v)
	}
	if len(shape) > 1 {
		sh = strings.TrimSuffix(sh, " ")
		sh = strings.TrimSuffix(sh, ",")
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var b bytes.Buffer
	b.WriteString(npy.Magic + "\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	return b.Bytes()
}

type member struct {
	name string
	data []byte
}

// members reads the members of an .npz archive in order.
func members(t *testing.T, npz []byte) []member {
	z, err := zip.NewReader(bytes.NewReader(npz), int64(len(npz)))
	if err != nil {
		t.Fatal(err)
	}
	var ms []member
	for _, f := range z.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		ms = append(ms, member{f.Name, b.Bytes()})
	}
	return ms
}

func zipOf(t *testing.T, ms []member, deflate bool) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, m := range ms {
		method := zip.Store
		if deflate {
			method = zip.Deflate
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		f.Write(m.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// weights.npz files that disagree with spec.json are refused naming the
// file, the member and what was expected.
func TestLoadRefusesMismatchedWeights(t *testing.T) {
	_, spec, weights := saved(t, tensor.Float64)
	orig := members(t, weights)
	edit := func(f func(ms []member) []member) []byte {
		ms := append([]member(nil), orig...)
		return zipOf(t, f(ms), false)
	}
	find := func(ms []member, name string) int {
		for i, m := range ms {
			if m.name == name+".npy" {
				return i
			}
		}
		t.Fatalf("no member %s", name)
		return -1
	}
	replace := func(name string, data []byte) []byte {
		return edit(func(ms []member) []member { ms[find(ms, name)] = member{name + ".npy", data}; return ms })
	}
	f64 := func(n int) []byte { return make([]byte, 8*n) }
	// A 64 MiB member compressed to 64 KiB: a zip bomb for a reader that
	// decodes members before checking them (it is refused unread).
	bomb := zipOf(t, append(append([]member(nil), orig...), member{"junk.npy", npyBytes("<f8", []int{1 << 23}, make([]byte, 8<<23))}), true)
	cases := []struct {
		name    string
		weights []byte
		want    []string
	}{
		{"missing member", edit(func(ms []member) []member {
			i := find(ms, "ebm.net.4.bias")
			return append(ms[:i], ms[i+1:]...)
		}), []string{`no member "ebm.net.4.bias"`, `"ebm.net.0.weight"`}},
		{"extra member", edit(func(ms []member) []member {
			return append(ms, member{"ebm.net.10.weight.npy", npyBytes("<f8", []int{1}, f64(1))})
		}), []string{`"ebm.net.10.weight"`, "not parameters of spec.json's model"}},
		{"zip bomb extra member", bomb, []string{`"junk"`, "not parameters"}},
		{"duplicate member", edit(func(ms []member) []member { return append(ms, ms[0]) }), []string{fmt.Sprintf("member %q appears twice", strings.TrimSuffix(orig[0].name, ".npy"))}},
		{"int64 dtype", replace("ebm.net.0.bias", npyBytes("<i8", []int{32}, f64(32))), []string{`"ebm.net.0.bias"`, `dtype "<i8", want "<f8"`}},
		{"float32 in a float64 spec", replace("ebm.net.0.bias", npyBytes("<f4", []int{32}, make([]byte, 4*32))), []string{`"ebm.net.0.bias"`, `dtype "<f4", want "<f8"`, "float64"}},
		{"bool dtype", replace("ebm.net.0.bias", npyBytes("|b1", []int{32}, make([]byte, 32))), []string{`"ebm.net.0.bias"`, `dtype "|b1"`}},
		{"transposed", replace("ebm.net.0.weight", npyBytes("<f8", []int{2, 32}, f64(64))), []string{`"ebm.net.0.weight"`, "shape [2 32], want [32 2]"}},
		{"flattened", replace("ebm.net.0.weight", npyBytes("<f8", []int{64}, f64(64))), []string{`"ebm.net.0.weight"`, "shape [64], want [32 2]"}},
		{"huge shape", replace("ebm.net.0.weight", npyBytes("<f8", []int{1 << 20, 1 << 20}, nil)), []string{`"ebm.net.0.weight"`, "want [32 2]"}},
		{"truncated data", replace("ebm.net.0.weight", npyBytes("<f8", []int{32, 2}, f64(63))), []string{`"ebm.net.0.weight"`, "truncated"}},
		{"trailing data", replace("ebm.net.0.weight", npyBytes("<f8", []int{32, 2}, f64(65))), []string{`"ebm.net.0.weight"`, "data after the 64 values"}},
		{"not npy", replace("ebm.net.0.weight", []byte("hello")), []string{`"ebm.net.0.weight"`, "magic"}},
		{"not a zip", []byte("PK\x03\x04 but not really"), []string{"not a zip"}},
		{"empty file", nil, []string{"not a zip"}},
		{"truncated zip", weights[:len(weights)/2], []string{"not a zip"}},
	}
	for _, c := range cases {
		dir := writeCk(t, spec, c.weights)
		msg := loadErr(t, c.name, dir)
		wantIn(t, c.name, msg, append(c.want, filepath.Join(dir, "weights.npz"))...)
	}

	// A flow in weights.npz that spec.json does not describe.
	noFlow := editSpec(t, spec, func(m map[string]any) { delete(m, "flow") })
	msg := loadErr(t, "flow without spec", writeCk(t, noFlow, weights))
	wantIn(t, "flow without spec", msg, `"flow.couplings.0.s.0.weight"`, "not parameters of spec.json's model", "(32 in all)")

	// A corrupted byte inside a stored member is caught by its checksum.
	bad := zipOf(t, orig, false)
	i := bytes.Index(bad, orig[0].data[len(orig[0].data)-8:])
	bad[i] ^= 1
	msg = loadErr(t, "checksum", writeCk(t, spec, bad))
	wantIn(t, "checksum", msg, strconv.Quote(strings.TrimSuffix(orig[0].name, ".npy")), "checksum")
}

// FuzzLoadSpec loads arbitrary spec.json contents with a valid weights.npz:
// Load must return models or an error naming spec.json or weights.npz,
// never panic (the parameter bound is lowered so that accepted specs stay
// small).
func FuzzLoadSpec(f *testing.F) {
	old := maxParams
	maxParams = 1 << 16
	f.Cleanup(func() { maxParams = old })
	_, spec, weights := saved(f, tensor.Float64)
	f.Add(spec)
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"format":"flowebm-checkpoint/1","dtype":"float32","base_sigma":[1,1],"ebm":{"sizes":[2,3,1],"activation":"tanh","layout":"modulelist"},"flow":{"dim":2,"blocks":1,"hidden":[],"mask":"checkerboard2d","mask_width":1}}`))
	f.Add([]byte(`{"format":"flowebm-checkpoint/1","dtype":"float64","base_sigma":[1,1],"ebm":{"sizes":[2,1048576,1048576,1],"activation":"relu","layout":"sequential"}} x`))
	f.Fuzz(func(t *testing.T, spec []byte) {
		dir := writeCk(t, spec, weights)
		m, s, err := Load(dir)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "spec.json") && !strings.Contains(msg, "weights.npz") {
				t.Fatalf("error names no file: %v", err)
			}
			return
		}
		if m.EBM == nil || (s.Flow == nil) != (m.Flow == nil) {
			t.Fatalf("models %+v for spec %+v", m, s)
		}
	})
}

// FuzzLoadWeights loads arbitrary weights.npz contents with a valid
// spec.json: an error naming weights.npz, or finite weights.
func FuzzLoadWeights(f *testing.F) {
	_, spec, weights := saved(f, tensor.Float32)
	f.Add(weights)
	f.Add(weights[:len(weights)-10])
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, w []byte) {
		dir := writeCk(t, spec, w)
		m, _, err := Load(dir)
		if err != nil {
			if !strings.Contains(err.Error(), filepath.Join(dir, "weights.npz")) {
				t.Fatalf("error names no file: %v", err)
			}
			return
		}
		for _, q := range append(m.EBM.Params.List(), m.Flow.Params.List()...) {
			for _, v := range q.Float64s() {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s: %v loaded", q.Name, v)
				}
			}
		}
	})
}

// A spec.json edited to huge layers is refused from weights.npz's headers
// before the models are built (Load allocated 4 GB first).
func TestHugeSpecRefusedBeforeBuild(t *testing.T) {
	_, spec, weights := saved(t, tensor.Float64)
	dir := writeCk(t, editSpec(t, spec, func(m map[string]any) {
		m["ebm"].(map[string]any)["sizes"] = []any{2, 16000, 16000, 1}
		delete(m, "flow")
	}), weights)
	msg := loadErr(t, "huge spec", dir)
	wantIn(t, "huge spec", msg, "its members hold", "the two files do not belong together")
}
