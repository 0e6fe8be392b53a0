package e2e

import "syscall"

// replicaProcAttr puts a replica in a process group of its own, so that the cleanup can kill whatever
// it started too, and has the kernel kill it if the test process dies first (a -timeout panic).
func replicaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
