package layers

import (
	"testing"
)

// The parameter counts of the image models' sizing match their
// parameters, and their graph-value bounds grow with their feature maps.
func TestImageSizes(t *testing.T) {
	if n := (ImageEnergy{}).ParamCount(); n != 222_017 {
		t.Errorf("default image EBM: %d parameters, want 222,017", n)
	}
	if n := (ImageRealNVP{}).ParamCount(); n != 191_524 {
		t.Errorf("default image RealNVP: %d parameters, want 191,524", n)
	}
	small, big := ImageEnergy{Channels: []int{16, 32, 32}}, ImageEnergy{}
	if !(small.GraphValues(true) < big.GraphValues(true) && small.GraphValues(false) < small.GraphValues(true) && small.GraphValues(false) > 784) {
		t.Errorf("EBM graph values: small %v/%v, default %v", small.GraphValues(true), small.GraphValues(false), big.GraphValues(true))
	}
	if (ImageEnergy{Channels: []int{0}}).GraphValues(true) != 0 || (ImageRealNVP{Scales: -1}).ParamCount() != 0 {
		t.Error("invalid models sized")
	}
}
