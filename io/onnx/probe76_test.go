package onnx

import (
	"path/filepath"
	"strings"
	"testing"
)

// Round 76 A3: BatchNorm exported by PyTorch in training mode at opsets 9
// and 13 (five outputs mark the mode there) was computed with the running
// statistics, at exit 0; it is refused as training_mode 1 is.
func TestBatchNormTrainingOutputsRefused(t *testing.T) {
	for _, opset := range []string{"9", "13"} {
		_, err := ReadFile(filepath.Join("testdata", "pinned", "bn_train_o"+opset+"_dyn.onnx"))
		if err == nil || !strings.Contains(err.Error(), "5 outputs, which at opset "+opset+" mark training mode") ||
			!strings.Contains(err.Error(), "export the model in eval() mode") {
			t.Errorf("opset %s: %v", opset, err)
		}
	}
}

// Round 76 A4: a node that fails whatever the batch (a Gather index past
// its axis, Slice step 0) was given advice about the dynamic batch, which
// did not help; a node failing only at the check's batch keeps it.
func TestBatchAdviceOnlyWhereTheBatchMatters(t *testing.T) {
	sum := mdNode("y", "ReduceSum", []string{"c"}, []string{"y"}, intsAttr("axes", 1), intAttr("keepdims", 0).encode())
	model := func(n msg, inits ...msg) []byte {
		return lmModel(hgGraphBatch("N", []msg{n, sum}, inits, "y"), 8, 11)
	}
	gather := model(mdNode("c", "Gather", []string{"x", "i"}, []string{"c"}, intAttr("axis", 1).encode()), hgInt64s("i", []int64{1}, 5))
	_, err := DecodeConfig(gather, "gather.onnx", Config{})
	if err == nil || !strings.Contains(err.Error(), "index 5 out of range for axis 1 of size 3") || strings.Contains(err.Error(), "dynamic batch") {
		t.Errorf("gather: %v", err)
	}
	// x[1:-1] along the batch: empty at the check's batch of 2, not at 5.
	slice := model(mdNode("c", "Slice", []string{"x", "st", "en", "ax"}, []string{"c"}),
		hgInt64s("st", []int64{1}, 1), hgInt64s("en", []int64{1}, -1), hgInt64s("ax", []int64{1}, 0))
	_, err = DecodeConfig(slice, "slice.onnx", Config{})
	if err == nil || !strings.Contains(err.Error(), "declares a dynamic batch") {
		t.Errorf("slice: %v", err)
	}
}
