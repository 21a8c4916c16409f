package npu

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Memlock returns the process's RLIMIT_MEMLOCK soft limit in bytes, 0 when
// it is unlimited or cannot be read.
func Memlock() int64 {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r) != nil || r.Cur == unix.RLIM_INFINITY {
		return 0
	}
	return int64(min(r.Cur, 1<<62))
}

// pinAdvice adds to an allocation error that hit the pin limit the limit
// and how to raise it.
func pinAdvice(err error) string {
	if !errors.Is(err, ErrPinLimit) {
		return err.Error()
	}
	lim := "unknown"
	if m := Memlock(); m > 0 {
		lim = fmt.Sprintf("%d KiB", m>>10)
	}
	return fmt.Sprintf("%v: the memlock limit (ulimit -l) is %s; raise it with `ulimit -l unlimited` in the shell that starts xdnarun, or a memlock line in /etc/security/limits.conf (docs/first-hour.md)", err, lim)
}
