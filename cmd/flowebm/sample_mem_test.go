package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gorgonia.org/tensor"

	"github.com/flowebm/flowebm/graph"
	"github.com/flowebm/flowebm/internal/childtest"
	"github.com/flowebm/flowebm/internal/sysmem"
	"github.com/flowebm/flowebm/io/checkpoint"
	"github.com/flowebm/flowebm/io/onnx"
	"github.com/flowebm/flowebm/layers"
)

// tinyConvImage is the images of the tiny conv checkpoints of these tests.
var tinyConvImage = layers.ImageShape{C: 1, H: 8, W: 8}

// tinyConvEBM is their EBM: channels [4], a random last layer (so that E
// is not constant).
func tinyConvEBM() layers.ImageEnergy {
	return layers.ImageEnergy{Image: tinyConvImage, Channels: []int{4}, OutInit: layers.ScaledNormal(1)}
}

// writeConvCheckpoint saves a tiny conv checkpoint (conv EBM and conv
// RealNVP on 1×8×8 images, untrained) into dir/ckpt and returns its path.
func writeConvCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	base := layers.NewIsotropic(tinyConvImage.Dim(), 1)
	ebm, err := graph.NewEBM(tinyConvEBM(), &base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := graph.NewFlow(layers.ImageRealNVP{Image: tinyConvImage, Scales: 1, Hidden: 4}, base, tensor.Float64, rng)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ckpt")
	if err := checkpoint.Save(path, checkpoint.Models{EBM: ebm, Flow: flow}); err != nil {
		t.Fatal(err)
	}
	return path
}

// convSampleRun is a MALA run of chains chains on a conv checkpoint
// (memSampleFlags) and its models, loaded.
func convSampleRun(t *testing.T, chains int) (sampleFlags, checkpoint.Models) {
	t.Helper()
	f := memSampleFlags(writeConvCheckpoint(t, t.TempDir()), chains)
	m, err := f.models()
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// memSampleFlags are sample's flags for a MALA run of chains chains on
// model (checkMemory's inputs only).
func memSampleFlags(model string, chains int) sampleFlags {
	return sampleFlags{model: model, sampler: "mala", chains: chains, steps: 4, shards: 1, step: 0.01,
		changed: func(string) bool { return false }}
}

// oldChainBytes is what sample counted per chain before the models'
// graphs entered its estimate: workBuffers buffers and steps draws of d
// float64s.
func oldChainBytes(f sampleFlags, d int) float64 {
	return float64(workBuffers+f.steps) * float64(d) * 8
}

// Finding 13.3: sample on a conv checkpoint counts the EBM's gradient
// graph per chain (layers.ImageEnergy.GraphValues): a number of chains
// whose buffers and draws alone fit (90% of the limit) is refused before
// anything is allocated, naming --chains and the graph.
func TestSampleMemoryCountsConvGraph(t *testing.T) {
	model := writeConvCheckpoint(t, t.TempDir())
	d := tinyConvImage.Dim()
	limit := memoryLimit(maxWorkBytes)
	f := memSampleFlags(model, 0)
	f.chains = int(0.9 * limit / oldChainBytes(f, d))
	if g := tinyConvEBM().GraphValues(true) * 8; float64(f.chains)*g < 0.2*limit {
		t.Fatalf("the test's EBM graph (%v B a chain) is too small to show the estimate", g)
	}
	_, err := f.models()
	want := fmt.Sprintf("--chains %d × %.3g MB (the EBM's graph with ∇ₓE)", f.chains, tinyConvEBM().GraphValues(true)*8/1e6)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "use fewer chains") {
		t.Fatalf("sample --chains %d on a conv checkpoint: %v; want a refusal naming %q", f.chains, err, want)
	}
	// A run that fits is accepted.
	f.chains = 64
	if _, err := f.models(); err != nil {
		t.Fatalf("sample --chains 64: %v", err)
	}
}

// ulimitChildEnv marks the process TestSampleLimitHonoursUlimit starts
// under a lowered address-space limit.
const ulimitChildEnv = "FLOWEBM_TEST_SAMPLE_ULIMIT_CHILD"

// Finding 13.3: sample's limit is energy's memoryLimit: under ulimit -v
// it is half the address space, and a run that fits the machine's limit
// but not that one is refused (checked in a child process, whose limit
// alone is lowered).
func TestSampleLimitHonoursUlimit(t *testing.T) {
	if childtest.Run(t, "TestSampleLimitHonoursUlimit", ulimitChildEnv) {
		sampleUnderUlimit(t)
	}
}

// sampleUnderUlimit lowers this process's address-space limit to what it
// maps and 2 GiB, and checks that sample is refused where its estimate is
// under the machine's limit but over half the address space.
func sampleUnderUlimit(t *testing.T) {
	model := writeConvCheckpoint(t, t.TempDir())
	machine := sysmem.Limit(maxWorkBytes)
	as := mappedBytes(t) + 3<<30
	if as/2 >= 0.8*machine {
		t.Skipf("this process maps %.3g GB: no room under the machine's limit of %.3g GB", as/1e9, machine/1e9)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(as), Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	f := memSampleFlags(model, 64)
	m, err := f.models()
	if err != nil {
		t.Fatal(err)
	}
	work, _ := f.workMemory(m)
	perChain := work/float64(f.chains) + float64(f.steps*m.EBM.Dim()*8)
	free, _ := sysmem.AddressSpaceFree()
	if free > as-mappedBytes(t) || free <= 0 {
		t.Fatalf("under ulimit -v %.3g GB, %.3g GB free, want less than %.3g GB not mapped", as/1e9, free/1e9, (as-mappedBytes(t))/1e9)
	}
	f.chains = int((free/2 + machine) / 2 / perChain) // between the two limits
	_, err = f.models()
	want := "that ulimit -v " + sysmem.Bytes(as) + " leaves free"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("sample --chains %d under ulimit -v %.3g GB: %v; want a refusal with %q", f.chains, as/1e9, err, want)
	}
}

// mappedBytes is this process's virtual memory size (VmSize).
func mappedBytes(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(l, "VmSize: %f kB", &kb); err == nil {
			return kb * 1024
		}
	}
	t.Skip("no VmSize")
	return 0
}

// ulimitRoomChildEnv marks the process TestRefusesUlimitWithoutRoom starts.
const ulimitRoomChildEnv = "FLOWEBM_TEST_ULIMIT_ROOM_CHILD"

// Probe 14: under a ulimit -v that leaves nothing beyond what the runtime
// and OpenBLAS map at start, energy aborted ("fatal error: out of memory")
// or spun for minutes; every command now refuses at start, saying by how
// much to raise it (checked in a child process, whose limit alone is
// lowered to what it maps and 100 MiB).
func TestRefusesUlimitWithoutRoom(t *testing.T) {
	if !childtest.Run(t, "TestRefusesUlimitWithoutRoom", ulimitRoomChildEnv) {
		return
	}
	runCLI("--version") // OpenBLAS loaded and its threads started before the mappings are measured: under load the child's first command loaded it past the limit and died (session 37)
	as := mappedBytes(t) + 100<<20
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(as), Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	dir := t.TempDir()
	_, stderr, status := runCLI("energy", "--model", filepath.Join(dir, "m"), "--points", filepath.Join(dir, "p.npy"), "--out", filepath.Join(dir, "e.npy"))
	if status == 0 || !strings.Contains(stderr, "ulimit -v leaves no room to work in") || !strings.Contains(stderr, "raise it by at least") {
		t.Fatalf("status %d, %q; want a refusal that says how much to raise ulimit -v", status, stderr)
	}
}

// onnxUlimitChildEnv marks the process TestLargeONNXUnderUlimit starts.
const onnxUlimitChildEnv = "FLOWEBM_TEST_ONNX_ULIMIT_CHILD"

// Probe 19: an ONNX file of 1 GB (under the 2 GiB protobuf limit) killed
// energy with a fatal "out of memory" under a 4 GB ulimit -v (the read
// took 2.5 times the file); it is refused by the memory it would take,
// naming the file (checked in a child whose limit alone is lowered: the
// process's mappings and 2 GiB).
func TestLargeONNXUnderUlimit(t *testing.T) {
	if !childtest.Run(t, "TestLargeONNXUnderUlimit", onnxUlimitChildEnv) {
		return
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.onnx")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse
		t.Skip(err)
	}
	f.Close()
	as := mappedBytes(t) + 2<<30
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(as), Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	_, err = modelLoader{}.load(big, onnx.Config{})
	if err == nil || !strings.Contains(err.Error(), big+": 1 GiB; reading it as an ONNX model may take about 4 GiB of memory, over the limit") {
		t.Errorf("a 1 GiB ONNX file under a low ulimit -v: %v", err)
	}
}
