//go:build !linux

package e2e

import "syscall"

// replicaProcAttr puts a replica in a process group of its own, so that the cleanup can kill whatever
// it started too.
func replicaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
