package vcsim

import "syscall"

// sysProcAttr: the kernel kills the simulator when the thread that forked it (kept alive for the child's
// lifetime, see startChild) goes away with its process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
