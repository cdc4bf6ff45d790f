package nd

import (
	"math"
	"testing"
)

// RoundBinary against values whose half and bfloat16 roundings are known
// (IEEE 754 binary16: 10 fraction bits, normals from 2^-14, largest 65504;
// bfloat16: float32's exponent range with 7 fraction bits), and every
// float32 value of a range against float32 conversion itself.
func TestRoundBinary(t *testing.T) {
	half := func(x float64) float64 { return RoundBinary(x, 10, -14, 65504) }
	for _, c := range []struct{ x, want float64 }{
		{1, 1},
		{1 + 1.0/2048, 1},                        // a tie: to even
		{1 + 3.0/2048, 1 + 2.0/1024},             // a tie: to even (up)
		{0.1, 0.0999755859375},                   // torch.tensor(0.1).half()
		{3.14159265, 3.140625},                   // torch.tensor(3.14159265).half()
		{65504, 65504},                           // the largest
		{65519.99, 65504},                        // rounds down to it
		{65520, math.Inf(1)},                     // rounds up beyond it
		{-1e6, math.Inf(-1)},                     //
		{math.Ldexp(1, -24), math.Ldexp(1, -24)}, // the least subnormal
		{math.Ldexp(1, -26), 0},                  // below half of it
		{math.Ldexp(3, -26), math.Ldexp(1, -24)},
		{-2.5e-6, -2.50339508056640625e-06}, // a subnormal
	} {
		if got := half(c.x); got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("half(%g) = %.17g, want %.17g", c.x, got, c.want)
		}
	}
	for _, x := range []float64{0.1, 1.0 / 3, 123456.789, -7.77e-30} {
		if got, want := unaryDefs[ToFloat32].f(x, 0, 0), float64(float32(x)); got != want {
			t.Errorf("ToFloat32(%g) = %g, want %g", x, got, want)
		}
	}
	if got := unaryDefs[ToBFloat16].f(1.0/3, 0, 0); got != 0.333984375 { // torch.tensor(1/3).bfloat16()
		t.Errorf("bfloat16(1/3) = %.17g, want 0.333984375", got)
	}
	// Every float32 value between 1 and 2 (2^23 of them, every 97th)
	// rounded to 10 bits equals rounding its float32 bits by hand.
	for bits := uint32(0x3f800000); bits < 0x40000000; bits += 97 {
		x := float64(math.Float32frombits(bits))
		frac := bits & 0x7fffff
		r := frac >> 13
		rem := frac & 0x1fff
		if rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
			r++
		}
		want := 1 + float64(r)/1024
		if got := half(x); got != want {
			t.Fatalf("half(%.9g) = %.17g, want %.17g", x, got, want)
		}
	}
}
