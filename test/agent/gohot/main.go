// gohot: a Go program that spends its time in a function with an inlined
// callee and writes its own CPU profile, for test/agent/run.sh and
// test/symbolize/run.sh: the frames the agent (and the database) name for
// it are compared with those go tool pprof reads from this profile.
//
//	gohot SECONDS PROFILE
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

var sink uint64

// mix is small enough to be inlined into spin.
func mix(x uint64) uint64 {
	x ^= x >> 31
	x *= 0x9e3779b97f4a7c15
	return x ^ x>>29
}

//go:noinline
func spin(n int) uint64 {
	s := uint64(1)
	for i := 0; i < n; i++ {
		s = mix(s + uint64(i))
	}
	return s
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gohot SECONDS PROFILE")
		os.Exit(2)
	}
	seconds, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohot:", err)
		os.Exit(2)
	}
	out, err := os.Create(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohot:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		fmt.Fprintln(os.Stderr, "gohot:", err)
		os.Exit(1)
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for time.Now().Before(end) {
		sink += spin(1 << 20)
	}
	pprof.StopCPUProfile()
	out.Close()
}
