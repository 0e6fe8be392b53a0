package loadtest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// pinnedVar marks a process that PinSelf already re-executed under taskset.
const pinnedVar = "LOADTEST_PINNED_CPUS"

// WithCPUs runs the child on the listed CPUs only (taskset's list syntax: "0", "0-1", "0,2"). A bench
// pins the service under test and the load generator to different cores, so that the latency it
// measures is the service's and not the wait for a core the generator holds. The Go runtime sizes
// GOMAXPROCS from the affinity mask, so a child pinned to one CPU runs with GOMAXPROCS=1.
func WithCPUs(cpus string) ChildOption {
	return func(c *exec.Cmd) {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			c.Err = fmt.Errorf("pin to CPUs %s: %w", cpus, err)
			return
		}
		c.Args = append([]string{"taskset", "-c", cpus, c.Path}, c.Args[1:]...)
		c.Path = taskset
	}
}

// PinSelf makes the running program run on the listed CPUs only: it replaces the process with itself
// under taskset, with the same arguments and environment, and returns only on failure or in the
// re-executed process (where it does nothing). Affinity is per thread in Linux and the Go runtime
// has started threads before main, so setting it from inside would leave some of them unpinned;
// starting over under taskset pins every thread from the first.
func PinSelf(cpus string) error {
	if os.Getenv(pinnedVar) == cpus {
		return nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("pin to CPUs %s: %w", cpus, err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{"taskset", "-c", cpus, self}, os.Args[1:]...)
	return syscall.Exec(taskset, args, append(os.Environ(), pinnedVar+"="+cpus))
}
