//go:build !linux

package capicore

import "syscall"

// sysProcAttr: no Pdeathsig outside Linux; the child still exits when its stdin closes with our process.
func sysProcAttr() *syscall.SysProcAttr { return nil }
