package algorithms

import (
	"math"
	"strings"
	"testing"
)

// Two Adam steps against torch.optim.Adam's update rule written out by hand
// (defaults β = (0.9, 0.999), ε = 1e-8, bias-corrected moments): the first
// step moves each coordinate by lr·g/(|g| + ε), the second by
// lr·m̂/(√v̂ + ε).
func TestAdamMatchesHandComputedSteps(t *testing.T) {
	opt, err := OptimConfig{Name: "adam", LR: 0.1}.New(2)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{1, -2}
	g1, g2 := []float64{0.5, -1}, []float64{0.25, 2}
	opt.Step(p, g1)
	opt.Step(p, g2)
	want := make([]float64, 2)
	for i := range want {
		m := 0.9*(0.1*g1[i]) + 0.1*g2[i]
		v := 0.999*(0.001*g1[i]*g1[i]) + 0.001*g2[i]*g2[i]
		mh, vh := m/(1-0.81), v/(1-0.999*0.999)
		step1 := 0.1 * g1[i] / (math.Abs(g1[i]) + 1e-8)
		want[i] = []float64{1, -2}[i] - step1 - 0.1*mh/(math.Sqrt(vh)+1e-8)
	}
	for i := range p {
		if math.Abs(p[i]-want[i]) > 1e-12 {
			t.Errorf("Adam p[%d] = %.15g, want %.15g", i, p[i], want[i])
		}
	}
}

func TestSGDMomentumAndDecay(t *testing.T) {
	opt, err := OptimConfig{Name: "sgd", LR: 0.5, Momentum: 0.9}.New(1)
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{0}
	opt.Step(p, []float64{1}) // buf 1, p −0.5
	opt.Step(p, []float64{1}) // buf 1.9, p −1.45
	if math.Abs(p[0]+1.45) > 1e-15 {
		t.Errorf("SGD with momentum: p = %v, want -1.45", p[0])
	}
	c := OptimConfig{LR: 0.01, Decay: 0.5, DecayEvery: 10}
	if lr := c.scheduledLR(25); math.Abs(lr-0.0025) > 1e-15 {
		t.Errorf("decayed lr after 25 steps = %v, want 0.0025", lr)
	}
	if _, err := (OptimConfig{Name: "rmsprop"}).New(1); err == nil {
		t.Error("unknown optimiser accepted")
	}
}

// Probe 15: Adam with momentum −1 was told only that momentum is SGD's;
// the message says too that −1 is not a momentum SGD takes.
func TestAdamMomentumMessage(t *testing.T) {
	for _, c := range []struct {
		m    float64
		want string
	}{{-1, "momentum -1 is SGD's, and not one SGD takes (want [0, 1)); e.name is \"adam\""}, {0.5, "momentum 0.5 is SGD's; e.name is \"adam\""}} {
		err := OptimConfig{Momentum: c.m}.validateKind("e")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("momentum %v: %v, want %q", c.m, err, c.want)
		}
	}
}
