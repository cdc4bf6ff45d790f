package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowebm/flowebm/io/safefile"
)

// validRecord reports whether b, a figure record's bytes, lists figure
// names (isFigure) one a line, and at least one.
func validRecord(b []byte, isFigure func(string) bool) bool {
	n := 0
	for _, name := range strings.Split(string(b), "\n") {
		if name == "" {
			continue
		}
		if !isFigure(name) || name != filepath.Base(name) {
			return false
		}
		n++
	}
	return n > 0
}

// figureSet lists the figures that an earlier command drew into dir (its
// record, a file there listing them one name a line) and this one,
// drawing drawn, does not; with force it removes them. It then records
// drawn as dir's figures, with those it keeps. Where there is no record
// (recorded false), it removes nothing and lists the files named like the
// command's figures (isFigure) other than drawn, which it leaves. Only a recorded name that
// is one of the command's figures (isFigure) and a regular file counts: a
// user's own file, even named like a figure, is never removed (round 117
// B1, round 118 B2), nor what a damaged record lists (round 119 B2:
// summary.md, the lock, a folder). A record that cannot be read (not a
// regular file, too large) is taken as none and, where it is a file,
// written again: nothing fails once the figures are in place (B3).
func figureSet(dir, record string, drawn []string, isFigure func(string) bool, force bool) (others []string, recorded bool, err error) {
	path := filepath.Join(dir, record)
	fi, statErr := os.Lstat(path)
	regular := statErr == nil && fi.Mode().IsRegular()
	var b []byte
	if regular {
		var readErr error
		b, readErr = safefile.ReadFile(path, 1<<20)
		recorded = readErr == nil && validRecord(b, isFigure)
		if !recorded {
			b = nil // round 121 A1: garbage taken for a record of no figures, the earlier set left unsaid
		}
	}
	if !recorded {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); e.Type().IsRegular() && isFigure(n) && !slices.Contains(drawn, n) {
				others = append(others, n)
			}
		}
	}
	var kept []string
	for _, name := range strings.Split(string(b), "\n") { // a valid record's names (validRecord), or none
		if name == "" || slices.Contains(drawn, name) || slices.Contains(others, name) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if force {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return others, recorded, err
			}
		} else {
			kept = append(kept, name)
		}
		others = append(others, name)
	}
	if statErr == nil && !regular { // a folder or a link in its place: left as it is
		return others, recorded, nil
	}
	kept = append(kept, drawn...)
	return others, recorded, safefile.Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, strings.Join(kept, "\n")+"\n")
		return err
	})
}
