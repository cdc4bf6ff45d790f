package safefile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the paths a and b atomically (renameat2
// RENAME_EXCHANGE), or returns errNoExchange where the file system cannot.
// A variable, so that tests take the other way.
var exchange = func(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange
	}
	return err
}
