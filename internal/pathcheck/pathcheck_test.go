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

// DotDot and Resolve return (they neither panic nor hang) on any path,
// and Resolve's result is absolute and clean.
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
		for _, p := range []string{path, filepath.Join(dir, path)} {
			if r, err := Resolve(p); err == nil && (!filepath.IsAbs(r) || filepath.Clean(r) != r) {
				t.Errorf("Resolve(%q) = %q: not absolute and clean", p, r)
			}
		}
	})
}

// Resolve reaches what filepath.EvalSymlinks reaches where that works
// (links absolute and relative, .. after a link, a missing rest, a file,
// a loop), and also where a link leads deeper than PATH_MAX (probe 46),
// where EvalSymlinks fails.
func TestResolve(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "f"), nil, 0o644)
	os.Symlink(filepath.Join(dir, "a", "b"), filepath.Join(dir, "abs"))
	os.Symlink(filepath.Join("b", "c"), filepath.Join(dir, "a", "rel"))
	os.Symlink(filepath.Join("..", "rel"), filepath.Join(dir, "a", "b", "up")) // b/up is a/b/c
	os.Symlink("loop", filepath.Join(dir, "loop"))
	os.Symlink("f", filepath.Join(dir, "a", "lf"))
	t.Chdir(filepath.Join(dir, "a"))
	for path, want := range map[string]string{
		"b/c":                   dir + "/a/b/c",
		"rel/x/y":               dir + "/a/b/c/x/y",
		dir + "/abs/c":          dir + "/a/b/c",
		dir + "/abs/../f":       dir + "/a/f",
		"b/up/../..":            dir + "/a",
		"lf":                    dir + "/a/f",
		"f/x":                   dir + "/a/f/x",
		"missing/../b":          dir + "/a/b",
		dir + "/loop/x":         dir + "/loop/x",
		"/../" + dir[1:] + "/a": dir + "/a",
		".":                     dir + "/a",
	} {
		got, err := Resolve(path)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", path, got, err, want)
		}
		if real, err := filepath.EvalSymlinks(path); err == nil {
			if abs, _ := filepath.Abs(real); abs != got {
				t.Errorf("Resolve(%q) = %q, EvalSymlinks %q", path, got, abs)
			}
		}
	}
	// A link to a folder 2,800 bytes deep, then 1,500 bytes more below it
	// and a link back up: the system follows it, EvalSymlinks cannot.
	deep := filepath.Join(dir, strings.Repeat(strings.Repeat("d", 99)+"/", 28))
	more := strings.Repeat(strings.Repeat("m", 99)+"/", 15)
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(deep, filepath.Join(dir, "S"))
	if err := os.MkdirAll(filepath.Join(dir, "S", more), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, "a", "b"), filepath.Join(dir, "S", more, "L"))
	path := filepath.Join(dir, "S", more, "L", "c", "x")
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		t.Fatalf("the system does not follow %s: %v", path, err)
	}
	if _, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		t.Log("EvalSymlinks followed the long link too")
	}
	if got, err := Resolve(path); err != nil || got != dir+"/a/b/c/x" {
		t.Errorf("Resolve(the long link) = %q, %v; want %s", got, err, dir+"/a/b/c/x")
	}
	// A relative path is walked from the working folder.
	var rel []string
	Walk("b/c", func(d, open string) bool { rel = append(rel, d); return true })
	if strings.Join(rel, " ") != ". b b/c" {
		t.Errorf("Walk(b/c) from %s: %q", dir+"/a", rel)
	}
	// Walk opens the folders of a path deeper than PATH_MAX, and files
	// two names deep in each, the longest a name can be (a folder 3,900
	// bytes deep is short, its files are not).
	long := filepath.Join(deep, more)
	file := filepath.Join(strings.Repeat("f", nameMax), strings.Repeat("g", nameMax))
	os.Chdir(dir) // made name by name: the paths are too long to give whole
	d := dir
	for _, name := range split(strings.TrimPrefix(long, dir)) {
		os.Chdir(name)
		d = filepath.Join(d, name)
		if len(d)+len(file) >= pathMax-1 {
			os.Mkdir(filepath.Dir(file), 0o755)
			os.WriteFile(file, nil, 0o644)
		}
	}
	var seen []string
	Walk(long, func(d, open string) bool {
		if _, err := os.Stat(open); err != nil {
			t.Errorf("Walk: %s opened as %s: %v", d, open, err)
		}
		if len(d) > len(dir) {
			if _, err := os.Stat(filepath.Join(open, file)); err != nil && len(d)+len(file) >= pathMax-1 {
				t.Errorf("Walk: a file two names deep in the folder %d bytes deep, opened as %s: %v", len(d), open, err)
			}
		}
		seen = append(seen, d)
		return true
	})
	if len(long) < pathMax || len(seen) == 0 || seen[len(seen)-1] != filepath.Clean(long) {
		t.Errorf("Walk(%d bytes) reached %d folders, the last %.40q…", len(long), len(seen), seen[len(seen)-1])
	}
}
