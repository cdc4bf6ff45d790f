package npz

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowebm/flowebm/internal/childtest"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/npy"
)

// GetInto decodes a member into the caller's buffer, refusing one of
// another number of values before decoding, and checks the CRC-32 as Get
// does.
func TestGetInto(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(), npy.Float32); err != nil {
		t.Fatal(err)
	}
	zr, err := NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, 6)
	a, err := zr.GetInto("net.0.weight", dst)
	if err != nil {
		t.Fatal(err)
	}
	if &a.Data[0] != &dst[0] || dst[5] != 6 || a.Dtype != "<f4" {
		t.Errorf("GetInto: %+v, dst %v", a, dst)
	}
	if _, err := zr.GetInto("net.0.bias", dst); err == nil || !strings.Contains(err.Error(), `member "net.0.bias.npy"`) || !strings.Contains(err.Error(), "want 6 values") {
		t.Errorf("3 values into 6: %v", err)
	}
	if _, err := zr.GetInto("missing", dst); err == nil || !strings.Contains(err.Error(), `no member "missing"`) {
		t.Errorf("missing: %v", err)
	}
	bad := bytes.Clone(buf.Bytes())
	i := bytes.Index(bad, []byte{0, 0, 0xc0, 0x40}) // 6 as float32, in net.0.weight
	bad[i+3] = 0x41
	zr, _ = NewReader(bytes.NewReader(bad), int64(len(bad)))
	if _, err := zr.GetInto("net.0.weight", dst); err == nil || !strings.Contains(err.Error(), "CRC-32") {
		t.Errorf("corrupt member: %v", err)
	}
}

// intoChildEnv marks the process TestGetIntoUnderUlimit starts.
const intoChildEnv = "FLOWEBM_TEST_NPZ_INTO_CHILD"

// Probe 56: a run's checkpointed bank, which the run had allocated, was
// refused on resuming because decoding it needed as much again. Under a
// ulimit -v that leaves room for the member's values once (a child
// process, whose limit alone is lowered: 64 MiB of values against a limit
// of half of about 100 MiB), Get refuses the member and GetInto reads it
// into the buffer the caller has.
func TestGetIntoUnderUlimit(t *testing.T) {
	if !childtest.Run(t, "TestGetIntoUnderUlimit", intoChildEnv) {
		return
	}
	const n = 8 << 20 // 64 MiB of float64
	path := filepath.Join(t.TempDir(), "bank.npz")
	bank := &npy.Array{Shape: []int{n / 2, 2}, Data: make([]float64, n)}
	for i := range bank.Data {
		bank.Data[i] = float64(i % 1000)
	}
	if err := WriteFile(path, map[string]*npy.Array{"bank": bank}, npy.Float64); err != nil {
		t.Fatal(err)
	}
	dst := bank.Data
	clear(dst)
	zr, err := OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	// Lower the limit to what is mapped, the room kept for threads, and
	// about 100 MiB: a limit just under none first, so that
	// AddressSpaceFree tells what the process keeps.
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: ^uint64(0) - 1, Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	free, _ := sysmem.AddressSpaceFree()
	var r syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_AS, &r)
	as := uint64(float64(r.Cur) - free + 100<<20)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	if free, _ := sysmem.AddressSpaceFree(); free > 150<<20 || free < 64<<20 {
		t.Skipf("%s free under ulimit -v %s, want about 100 MiB", sysmem.Bytes(free), sysmem.Bytes(float64(as)))
	}
	if _, err := zr.Get("bank"); err == nil || !strings.Contains(err.Error(), "decodes to 67108864 bytes of float64, more than the") {
		t.Fatalf("Get: %v, want a refusal", err)
	}
	if _, err := zr.GetInto("bank", dst); err != nil {
		t.Fatalf("GetInto: %v", err)
	}
	for i, v := range dst {
		if v != float64(i%1000) {
			t.Fatalf("value %d is %v", i, v)
		}
	}
}
