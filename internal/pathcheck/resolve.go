package pathcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// pathMax is the longest path the system takes in one call (PATH_MAX,
// counting its terminating NUL).
const pathMax = 4096

// nameMax is the longest name of a file (NAME_MAX).
const nameMax = 255

// maxLinks is how many symbolic links the system follows in one path
// before it gives up (Linux's MAXSYMLINKS).
const maxLinks = 40

// Resolve returns the absolute path that the system reaches by path: its
// longest existing part with every symbolic link followed and every ..
// taken as the system takes it, then the rest (which does not exist, or
// cannot be followed) as given. The links are followed name by name
// from open folders, so that the result is right however long it is:
// filepath.EvalSymlinks builds each step as a whole path and fails where
// one is longer than PATH_MAX, though the system follows the same path
// (probe 46: a link to a folder 2,783 bytes deep hid a later link into a
// run, and an output was written into it). The result may be longer
// than PATH_MAX; Walk opens its folders.
func Resolve(path string) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	start := path
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("the working folder: %w", err)
		}
		start = wd + string(filepath.Separator) + path
	}
	r := resolver{todo: split(start)}
	defer r.close()
	if err := r.root(); err != nil {
		return "", err
	}
	for len(r.todo) > 0 {
		if !r.step() {
			break
		}
	}
	return filepath.Join(append(append([]string{string(filepath.Separator)}, r.names...), r.todo...)...), nil
}

// resolver is the state of Resolve: the folder reached (open, and its
// names from /), the names still to follow, and the links followed.
type resolver struct {
	dir   int
	names []string
	todo  []string
	links int
}

func (r *resolver) root() error {
	fd, err := openFolder(unix.AT_FDCWD, "/")
	if err != nil {
		return fmt.Errorf("open /: %w", err)
	}
	r.close()
	r.dir, r.names = fd, nil
	return nil
}

func (r *resolver) close() {
	if r.dir > 0 {
		unix.Close(r.dir)
	}
	r.dir = 0
}

// step follows the next name, and reports whether the one after can be
// followed too (false: the name does not exist, is not a folder, or
// cannot be read, and it and the rest are left as given).
func (r *resolver) step() bool {
	name := r.todo[0]
	if name == "." {
		r.todo = r.todo[1:]
		return true
	}
	if name == ".." {
		if len(r.names) == 0 { // /.. is /
			r.todo = r.todo[1:]
			return true
		}
		return r.enter("..", r.names[:len(r.names)-1])
	}
	var st unix.Stat_t
	if unix.Fstatat(r.dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return r.enter(name, append(r.names, name))
	case unix.S_IFLNK:
		return r.follow(name)
	}
	return false // a file: nothing is below it
}

// enter opens the folder name of the folder reached, whose names from /
// are names.
func (r *resolver) enter(name string, names []string) bool {
	fd, err := openFolder(r.dir, name)
	if err != nil {
		return false
	}
	r.close()
	r.dir, r.names, r.todo = fd, names, r.todo[1:]
	return true
}

// follow puts the target of the link name in place of it.
func (r *resolver) follow(name string) bool {
	r.links++
	if r.links > maxLinks {
		return false // the system's ELOOP
	}
	buf := make([]byte, pathMax)
	n, err := unix.Readlinkat(r.dir, name, buf)
	if err != nil || n == 0 || n == len(buf) {
		return false
	}
	target := string(buf[:n])
	r.todo = append(split(target), r.todo[1:]...)
	if filepath.IsAbs(target) {
		return r.root() == nil
	}
	return true
}

// split is the names of path, without empty ones.
func split(path string) []string {
	var names []string
	for _, n := range strings.Split(path, string(filepath.Separator)) {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// openFolder opens the folder name of the folder dir for naming paths
// from (O_PATH: it needs no permission to read the folder), following no
// final link.
func openFolder(dir int, name string) (int, error) {
	return unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// Walk calls visit for the folders of the path abs (absolute and without
// links, as Resolve returns it; a relative path is walked from the
// working folder) from / down to abs, while they exist and
// visit returns true. It gives each folder's path and a path by which to
// open files in it, two names deep: the path itself where that stays
// within PATH_MAX, else the folder's name under /proc/self/fd, which is
// short however deep the folder is.
func Walk(abs string, visit func(dir, open string) bool) {
	dir := string(filepath.Separator)
	if !filepath.IsAbs(abs) { // one Resolve could not make absolute (the working folder was removed)
		dir = "."
	}
	fd, err := openFolder(unix.AT_FDCWD, dir)
	if err != nil {
		return
	}
	for _, name := range append(split(abs), "") {
		open := dir
		if len(dir)+2*(nameMax+1) >= pathMax {
			open = fmt.Sprintf("/proc/self/fd/%d", fd)
		}
		if !visit(dir, open) || name == "" {
			break
		}
		next, err := openFolder(fd, name)
		if err != nil {
			break
		}
		unix.Close(fd)
		fd, dir = next, filepath.Join(dir, name)
	}
	unix.Close(fd)
}
