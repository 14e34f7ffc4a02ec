package capicore

import "syscall"

// sysProcAttr: the kernel kills capi-core when the thread that forked it (kept alive for the child's
// lifetime, see Start) goes away with its process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
