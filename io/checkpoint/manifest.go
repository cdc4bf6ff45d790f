package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/internal/textclip"
	"github.com/flowebm/flowebm/io/safefile"
)

// ManifestName is the file that marks a checkpoint folder complete: the
// checkpoint format on its first line, then the SHA-256 of every other
// file in the folder as sha256sum writes them ("HEX  NAME"), so that a
// file changed, emptied or removed after the checkpoint was written is
// found rather than used (tail -n +2 COMPLETE | sha256sum -c checks them
// by hand).
const ManifestName = "COMPLETE"

// WriteManifest writes dir's manifest, last, over the files now in it.
func WriteManifest(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	lines := []string{Format}
	for _, e := range entries {
		if e.Name() == ManifestName || !e.Type().IsRegular() {
			continue
		}
		sum, err := safefile.SHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+e.Name())
	}
	return safefile.Write(filepath.Join(dir, ManifestName), func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
		return err
	})
}

// maxManifestBytes bounds the manifest read (a line per file of the
// checkpoint: hundreds of bytes).
const maxManifestBytes = 1 << 20

// CheckManifest checks the files of checkpoint folder dir against the
// SHA-256 sums its manifest lists, and that it lists each of required. A
// manifest of an earlier version (its format line only) lists nothing and
// passes; a missing manifest matches fs.ErrNotExist.
func CheckManifest(dir string, required ...string) error {
	sums, err := readManifest(dir)
	if err != nil {
		return err // a missing manifest too
	}
	return checkSums(dir, sums, func(string) bool { return true }, required)
}

// CheckListed checks the one file name of checkpoint folder dir against
// the SHA-256 its manifest lists for it: nil where it matches or is not
// listed (an earlier version's marker); a missing manifest matches
// fs.ErrNotExist.
func CheckListed(dir, name string) error {
	sums, err := readManifest(dir)
	if err != nil {
		return err
	}
	for _, e := range sums {
		if e.name == name {
			return checkListed(dir, e.name, e.sum)
		}
	}
	return nil
}

// listed is a manifest's line: a file's name and SHA-256.
type listed struct{ name, sum string }

// readManifest reads dir's manifest: the files it lists, in its order.
func readManifest(dir string) ([]listed, error) {
	marker := filepath.Join(dir, ManifestName)
	b, err := safefile.ReadFile(marker, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if lines[0] != Format {
		return nil, fmt.Errorf("%s: first line %q, want %q", marker, clipLine(lines[0]), Format)
	}
	var out []listed
	for i, l := range lines[1:] {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok { // sha256sum -b writes "HEX *NAME"
			sum, name, ok = strings.Cut(l, " *")
		}
		if !ok || len(sum) != 64 || name == "" || strings.ContainsAny(name, "/\\") {
			return nil, fmt.Errorf("%s: line %d %q, want a SHA-256 and a file name as sha256sum writes them", marker, i+2, clipLine(l))
		}
		out = append(out, listed{name, sum})
	}
	return out, nil
}

// checkListed checks the file name in dir against its listed sum.
func checkListed(dir, name, sum string) error {
	marker := filepath.Join(dir, ManifestName)
	got, err := hashListed(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("%s, listed in %s: %v", name, marker, err) // not a missing marker
	}
	if !strings.EqualFold(got, sum) {
		return &MismatchError{Path: filepath.Join(dir, name), Marker: marker, Sum: strings.ToLower(sum)}
	}
	return nil
}

// MismatchError is a checkpoint file whose SHA-256 is not the one its
// folder's manifest (Marker) records for it (Sum, lower-case hex).
type MismatchError struct{ Path, Marker, Sum string }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s does not match the SHA-256 that %s records for it: one of them was changed after flowebm wrote them; restore it, or start a new run", e.Path, e.Marker)
}

// maxListedTextBytes bounds a checkpoint's JSON and CSV files (spec.json,
// state.json, evals.csv: kilobytes to megabytes, as their readers bound
// them), checked before hashing, so that a file of gigabytes is refused at
// once rather than hashed for seconds and then refused.
const maxListedTextBytes = 256 << 20

// hashListed is the SHA-256 of a file a manifest lists, refusing first a
// text file larger than its readers accept.
func hashListed(path string) (string, error) {
	switch filepath.Ext(path) {
	case ".json", ".csv":
		f, err := safefile.OpenLimited(path, maxListedTextBytes, "a checkpoint's JSON and CSV files are kilobytes to megabytes")
		if err != nil {
			return "", err
		}
		f.Close()
	}
	return safefile.SHA256(path)
}

// modelFiles are the files of a checkpoint its models are loaded from;
// the others (a training run's state: state.json, state.npz, evals.csv,
// window.json, run-config.json) are not read by Load.
var modelFiles = []string{"spec.json", "weights.npz", FlowSampleFile, FlowDensityFile}

// checkModelFiles checks the files the models are loaded from against
// dir's manifest, where it has one, and that it lists spec.json and
// weights.npz: a training state damaged leaves the models intact (round
// 110 B2: a finished run could no longer be sampled). OtherFilesDamage
// checks the rest.
func checkModelFiles(dir string) error {
	return checkListedFiles(dir, func(name string) bool { return slices.Contains(modelFiles, name) }, "spec.json", "weights.npz")
}

// OtherFilesDamage checks the files of checkpoint folder dir that Load
// does not read (a training run's state) against its manifest: nil where
// they match, or where dir has no manifest.
func OtherFilesDamage(dir string) error {
	return checkListedFiles(dir, func(name string) bool { return !slices.Contains(modelFiles, name) })
}

// checkListedFiles is CheckManifest over the listed files that keep
// selects, a missing manifest passing.
func checkListedFiles(dir string, keep func(string) bool, required ...string) error {
	sums, err := readManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return checkSums(dir, sums, keep, required)
}

// checkSums checks the files of sums (dir's manifest) that keep selects,
// and that it lists each of required; a manifest of an earlier version
// (no sums) passes.
func checkSums(dir string, sums []listed, keep func(string) bool, required []string) error {
	if len(sums) == 0 {
		return nil // an earlier version's marker
	}
	for _, e := range sums {
		if keep(e.name) {
			if err := checkListed(dir, e.name, e.sum); err != nil {
				return err
			}
		}
	}
	for _, name := range required {
		if !slices.ContainsFunc(sums, func(e listed) bool { return e.name == name }) {
			return fmt.Errorf("%s does not list %s: the marker was edited after flowebm wrote it; restore it, or start a new run", filepath.Join(dir, ManifestName), name)
		}
	}
	return nil
}

// clipLine shortens a line quoted in an error.
func clipLine(s string) string { return textclip.Cut(s, 80) }
