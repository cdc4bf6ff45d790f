package pathcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A .. is accepted where the system's parent is Go's, refused where a
// symbolic link (however written: L/.., L/./.., L//.., LR/x/../..), a
// missing folder or a file comes before it.
func TestDotDot(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/b", "far/sub", "far/run/checkpoint"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	os.Symlink(filepath.Join(dir, "far", "sub"), filepath.Join(dir, "L"))
	os.Symlink(filepath.Join(dir, "far", "run"), filepath.Join(dir, "LR"))
	os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "LA")) // a link whose parent is Go's too
	t.Chdir(dir)
	for path, want := range map[string]string{
		"a/b/../x":                              "",
		"a/./b/../../x":                         "",
		"../x":                                  "",
		"/":                                     "",
		"/..":                                   "",
		dir + "/a/b/../x":                       "",
		"LA/b/../x":                             "",
		"x":                                     "",
		"L/../x":                                "which the system resolves through a symbolic link",
		"L/./../x":                              "which the system resolves through a symbolic link",
		"L//../x":                               "which the system resolves through a symbolic link",
		dir + "/L/./../x":                       "which the system resolves through a symbolic link",
		"LR/checkpoint/../../x":                 "which the system resolves through a symbolic link",
		"missing/../x":                          "which does not exist",
		"f/../x":                                "which is not a folder",
		"a/b/../missing/../x":                   "which does not exist",
		"a/b/../../L/../../x":                   "which the system resolves through a symbolic link",
		strings.Repeat("a/b/../../", 50) + "x":  "",
		strings.Repeat("a/b/../../", 409) + "x": "", // 4,091 bytes: under PATH_MAX
		strings.Repeat("a/b/../../", 500) + "x": "", // 5,001 bytes: longer than PATH_MAX, left to the system (probe 44: a config's folder and path, joined, were refused)
	} {
		err := DotDot(path)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// DotDot returns (it neither panics nor hangs) on any path.
func FuzzDotDot(f *testing.F) {
	dir := f.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.Symlink(filepath.Join(dir, "a", "b"), filepath.Join(dir, "L"))
	for _, s := range []string{"L/../x", "a/b/../x", "//..//.", "../../..", "L/./..", "\x00/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if len(path) > 4096 {
			return
		}
		DotDot(filepath.Join(dir, path))
		DotDot(path)
	})
}
