//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package grep

import "syscall"

func mtimeOf(st *syscall.Stat_t) int64 { return st.Mtimespec.Sec*1e9 + st.Mtimespec.Nsec }
