package loadtest

import (
	"errors"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// Profile starts what a bench's child process records of itself over its whole run: a CPU profile
// written to cpuPath and an execution trace written to tracePath, each only when its path is set.
// stop ends both and closes their files; call it once the work to record is over.
func Profile(cpuPath, tracePath string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	record := func(path string, start func(*os.File) error, end func()) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := start(f); err != nil {
			return errors.Join(err, f.Close())
		}
		stops = append(stops, func() { end(); _ = f.Close() })
		return nil
	}
	if err := record(cpuPath, func(f *os.File) error { return pprof.StartCPUProfile(f) }, pprof.StopCPUProfile); err != nil {
		stop()
		return nil, err
	}
	if err := record(tracePath, func(f *os.File) error { return trace.Start(f) }, trace.Stop); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
