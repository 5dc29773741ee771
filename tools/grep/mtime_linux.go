package grep

import "syscall"

func mtimeOf(st *syscall.Stat_t) int64 { return st.Mtim.Sec*1e9 + st.Mtim.Nsec }
