package algorithms

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Probe 56: resuming a run with a bank of 10⁸ chains was refused: the
// checkpoint's bank was decoded into a new array beside the one the run
// had allocated, twice the memory the run was accepted with. The bank is
// restored into the run's own array (the same memory, the checkpoint's
// values).
func TestRestoreBankInPlace(t *testing.T) {
	a := smallTrainer(t, FlowMC)
	for range 2 {
		if _, err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := a.SaveState(dir); err != nil {
		t.Fatal(err)
	}
	b := smallTrainer(t, FlowMC)
	before := &b.Bank.RawMatrix().Data[0]
	if mat.Equal(a.Bank, b.Bank) {
		t.Fatal("the two trainers' banks agree before the restore: the test cannot tell")
	}
	if err := b.Restore(dir); err != nil {
		t.Fatal(err)
	}
	if &b.Bank.RawMatrix().Data[0] != before {
		t.Error("the restored bank is a new array, not the run's own")
	}
	if !mat.Equal(a.Bank, b.Bank) {
		t.Error("the restored bank differs from the saved one")
	}
}
