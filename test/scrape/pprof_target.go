// pprof_target: a Go program to be scraped by the parca scrape worker in
// tests and benchmarks.  It serves net/http/pprof on every port of a
// range (127.0.0.1 only), burns CPU in two known functions, allocates and
// contends on a mutex so that every default profile has samples, and
// serves misbehaving endpoints under path prefixes:
//
//	/hang/...     never answers
//	/garbage/...  answers 200 with bytes that are not a profile
//	/endless/...  answers 200 with a body that never ends
//	/bomb/...     answers 200 with a small gzip that inflates to 64 MB
//	/redirect/... redirects to file:///etc/passwd
//
// A process has one CPU profiler, so concurrent CPU profiles of several
// ports of one process fail; with -shared-cpu (for benchmarks with many
// ports) /debug/pprof/profile?seconds=N waits N seconds and returns the
// latest profile of one profiler that runs in 10-second windows.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"log"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

var sink uint64

// burnPrimes counts primes by trial division for about d.
//
//go:noinline
func burnPrimes(d time.Duration) {
	end := time.Now().Add(d)
	for n := uint64(3); time.Now().Before(end); n += 2 {
		prime := true
		for k := uint64(3); k*k <= n; k += 2 {
			if n%k == 0 {
				prime = false
				break
			}
		}
		if prime {
			sink++
		}
	}
}

// burnHashes hashes freshly allocated buffers for about d.
//
//go:noinline
func burnHashes(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		buf := make([]byte, 4096)
		buf[0] = byte(sink)
		sum := sha256.Sum256(buf)
		sink += uint64(sum[0])
	}
}

// burn runs f for duty of every 20 ms, forever.
func burn(f func(time.Duration), duty float64) {
	period := 20 * time.Millisecond
	for {
		f(time.Duration(duty * float64(period)))
		time.Sleep(time.Duration((1 - duty) * float64(period)))
	}
}

// contend makes two goroutines fight over a mutex, for the block and
// mutex profiles.
func contend() {
	var mu sync.Mutex
	for i := 0; i < 2; i++ {
		go func() {
			for {
				mu.Lock()
				time.Sleep(time.Millisecond)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
}

// sharedCPU runs the process's CPU profiler in windows and keeps the last.
type sharedCPU struct {
	mu     sync.Mutex
	latest []byte
}

func (c *sharedCPU) run(window time.Duration) {
	for {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			log.Fatal(err)
		}
		time.Sleep(window)
		pprof.StopCPUProfile()
		c.mu.Lock()
		c.latest = buf.Bytes()
		c.mu.Unlock()
	}
}

func (c *sharedCPU) serve(w http.ResponseWriter, r *http.Request) {
	sec, err := strconv.Atoi(r.FormValue("seconds"))
	if err != nil || sec <= 0 {
		sec = 30
	}
	select {
	case <-time.After(time.Duration(sec) * time.Second):
	case <-r.Context().Done():
		return
	}
	c.mu.Lock()
	latest := c.latest
	c.mu.Unlock()
	if latest == nil {
		http.Error(w, "no CPU profile yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(latest)
}

func main() {
	first := flag.Int("port", 18000, "first port")
	count := flag.Int("ports", 1, "number of consecutive ports")
	duty := flag.Float64("duty", 0.2, "share of one core each burner uses")
	shared := flag.Bool("shared-cpu", false, "serve CPU profiles of one shared profiler")
	flag.Parse()

	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	if *shared {
		c := &sharedCPU{}
		go c.run(10 * time.Second)
		mux.HandleFunc("/debug/pprof/profile", c.serve)
	} else {
		mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	}

	runtime.SetBlockProfileRate(int(time.Millisecond))
	runtime.SetMutexProfileFraction(1)
	if *duty > 0 {
		go burn(burnPrimes, *duty)
		go burn(burnHashes, *duty)
	}
	contend()

	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		zw.Write(zeros)
	}
	zw.Close()

	mux.HandleFunc("/hang/", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	mux.HandleFunc("/garbage/", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("this is not a profile\n"))
	})
	mux.HandleFunc("/endless/", func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte{0x42}, 65536)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/bomb/", func(w http.ResponseWriter, r *http.Request) {
		w.Write(bomb.Bytes())
	})

	var wg sync.WaitGroup
	for p := *first; p < *first+*count; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			log.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Print(http.Serve(ln, mux))
		}()
	}
	log.Printf("serving pprof on 127.0.0.1:%d-%d", *first, *first+*count-1)
	wg.Wait()
}
