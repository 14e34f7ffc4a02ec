//go:build !linux

package vcsim

import "syscall"

// sysProcAttr: no Pdeathsig outside Linux; the child still exits when its stdin closes with our process.
func sysProcAttr() *syscall.SysProcAttr { return nil }
