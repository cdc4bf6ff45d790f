package data

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCIFARDir writes CIFAR-10's six batches of 2 records each to dir.
func writeCIFARDir(t *testing.T, dir string) {
	t.Helper()
	for _, n := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		if err := os.WriteFile(filepath.Join(dir, n), cifarRecords(2), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A batch file larger than CIFAR-10's 10,000 records is refused from its
// size, before it is read, naming the file and the size wanted; a sparse
// file stands for the 30 GB one that was read until memory ran out.
func TestReadCIFAR10DirRefusesLargeBatch(t *testing.T) {
	for _, size := range []int64{(cifarBatch + 1) * cifarRecord, 30 << 30} {
		dir := t.TempDir()
		writeCIFARDir(t, dir)
		path := filepath.Join(dir, "data_batch_2.bin")
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		_, err := ReadCIFAR10Dir(dir, false)
		want := fmt.Sprintf("%s: size is %d bytes, want at most 10,000 records of 3,073 bytes (30,730,000 bytes), CIFAR-10's batch size", path, size)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != path || fe.Field != "size" || err.Error() != want {
			t.Errorf("%d bytes: %v, want a FormatError %q", size, err, want)
		}
	}
}

// A compressed stream is bounded while it is read: its 10,001st record
// is refused.
func TestReadCIFAR10RefusesTooManyRecords(t *testing.T) {
	_, err := ReadCIFAR10(bytes.NewReader(gz(make([]byte, (cifarBatch+1)*cifarRecord))), "b.bin")
	want := "b.bin: records is more than 10,000, want at most 10,000 records"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("10,001 records: %v, want %q", err, want)
	}
}

// An empty batch says that it has no records and what is wanted.
func TestReadCIFAR10EmptyMessage(t *testing.T) {
	_, err := ReadCIFAR10(bytes.NewReader(nil), "x.bin")
	want := "x.bin: no records: want at least one 3,073-byte record (1 label + 3×32×32 pixels)"
	if err == nil || err.Error() != want {
		t.Errorf("empty batch: %v, want %q", err, want)
	}
}

// IDXImageSize reads only the header: a file truncated after it still
// gives its sizes, plain or compressed; a bad header is the reader's error.
func TestIDXImageSize(t *testing.T) {
	dir := t.TempDir()
	ib, _ := idxFiles(3, 5, 7)
	for name, b := range map[string][]byte{"raw": ib[:16], "gz": gz(ib[:16])} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, b, 0o644)
		if n, r, c, err := IDXImageSize(path); n != 3 || r != 5 || c != 7 || err != nil {
			t.Errorf("%s: %d × %d × %d, %v; want 3 × 5 × 7", name, n, r, c, err)
		}
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, ib[:9], 0o644)
	var fe *FormatError
	if _, _, _, err := IDXImageSize(bad); !errors.As(err, &fe) || fe.File != bad || fe.Field != "header" {
		t.Errorf("truncated header: %v", err)
	}
}
