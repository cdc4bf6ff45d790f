package training

import (
	"strings"
)

// An Anchor gives a path that names a run's folder whatever happens
// meanwhile to the path the user gave (a link on it re-pointed, the
// folder moved or swapped), and the release of that path; it fails where
// that path no longer leads to the folder locked. flowebm train's opens
// the folder and returns /proc/self/fd/N once the folder's lock is found
// through it to be the file it locked.
type Anchor func() (at string, release func(), err error)

// Through runs write with at, the path by which to reach the folder dir:
// the anchor's where anchor is not nil, dir itself otherwise. write's
// error names dir where it named at (errors.Is and errors.As see through
// it). Writing through the anchor leaves no time between a check of the
// folder and the write (probe 49: a link re-pointed between them sent a
// run's figures into another run's folder).
func Through(dir string, anchor Anchor, write func(at string) error) error {
	if anchor == nil {
		return write(dir)
	}
	at, release, err := anchor()
	if err != nil {
		return err
	}
	defer release()
	if err := write(at); err != nil {
		return renamed(err, at, dir)
	}
	return nil
}

// renamed is err named as the user gave its folder: at replaced by dir in
// its words.
func renamed(err error, at, dir string) error {
	if at == dir || !strings.Contains(err.Error(), at) {
		return err
	}
	if none, ok := err.(NothingToResumeError); ok { // read by its Err (round 95 B6: train --seeds named /proc/self/fd/9)
		return NothingToResumeError{renamed(none.Err, at, dir)}
	}
	return &namedError{err: err, at: at, dir: dir}
}

// namedError is an error whose words name the folder at, said as dir.
type namedError struct {
	err     error
	at, dir string
}

func (e *namedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.at, e.dir) }
func (e *namedError) Unwrap() error { return e.err }

// through runs write with r.Dir and r.Waiting's words the run's folder as
// reached through its Anchor (Through), once its Guard allows; r.Dir is
// the user's again when it returns.
func (r *Run) through(write func() error) error {
	if err := r.Guarded(); err != nil {
		return err
	}
	dir, waiting := r.Dir, r.Waiting
	defer func() { r.Dir, r.Waiting = dir, waiting }()
	return Through(dir, r.Anchor, func(at string) error {
		r.Dir, r.Waiting = at, sayingDir(waiting, at, dir)
		return write()
	})
}

// sayingDir is say (nil: nil) with dir in its words where they name at.
func sayingDir(say func(string), at, dir string) func(string) {
	if say == nil || at == dir {
		return say
	}
	return func(msg string) { say(strings.ReplaceAll(msg, at, dir)) }
}
