// gowork: a Go program whose time goes to the scheduler's stack (g0) on
// behalf of main.main, for test/agent/run.sh: runtime.ReadMemStats stops
// the world and reads the statistics in functions that runtime.systemstack
// runs on g0, and runtime.Gosched gives up the processor through
// runtime.mcall, whose callee schedules on g0.
//
//	gowork SECONDS
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

var stats runtime.MemStats

//go:noinline
func readStats() {
	runtime.ReadMemStats(&stats)
}

//go:noinline
func yield() {
	for i := 0; i < 100; i++ {
		runtime.Gosched()
	}
}

func main() {
	seconds, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: gowork SECONDS")
		os.Exit(2)
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for time.Now().Before(end) {
		readStats()
		yield()
	}
}
