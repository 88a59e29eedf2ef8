// pushclient: the clients of test/push/run.sh and bench/push.sh, in Go's
// standard library (Go modules cannot be fetched here, so the SDKs' own
// code cannot be built; each request is made the way the named client
// makes it, as its source shows):
//
//	profile   -cpu F -heap F [-seconds S]: a real Go CPU and heap profile of
//	          this program running known hot functions (hotA ~2/3, hotB ~1/3)
//	gosdk     an /ingest upload as pyroscope-go's upstream/remote sends it:
//	          multipart/form-data with "profile" (and "sample_type_config",
//	          and the older SDKs' "prev_profile"), from/until in nanoseconds
//	push      a Push API request (push.v1.PusherService/Push, Connect
//	          unary) in protobuf or JSON, gzip or not
//	jfr       an /ingest upload of a JFR recording as pyroscope-java's
//	          PyroscopeExporter sends it (OkHttp multipart "jfr" + "labels")
//	slowloris connections that send a byte of their headers every few
//	          seconds, from a given local address
//	load      N clients pushing one profile as fast as they can, for S
//	          seconds: profiles/s, latency percentiles
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "pushclient: "+format+"\n", args...)
	os.Exit(1)
}

// ---- profile: a real Go program's profiles

var sink []byte
var counter uint64

//go:noinline
func hotA(n int) {
	for i := 0; i < n; i++ {
		counter = counter*6364136223846793005 + 1442695040888963407
	}
}

//go:noinline
func hotB(n int) {
	for i := 0; i < n; i++ {
		counter = counter*2862933555777941757 + 3037000493
	}
}

//go:noinline
func allocate(n int) {
	for i := 0; i < n; i++ {
		sink = make([]byte, 4096)
	}
}

func profileCmd(args []string) {
	fs := flag.NewFlagSet("profile", flag.ExitOnError)
	cpu := fs.String("cpu", "", "CPU profile file")
	heap := fs.String("heap", "", "heap profile file")
	heap0 := fs.String("heap0", "", "heap profile file written halfway")
	seconds := fs.Float64("seconds", 2, "how long to run")
	fs.Parse(args)
	runtime.MemProfileRate = 4096
	f, err := os.Create(*cpu)
	if err != nil {
		die("%v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		die("%v", err)
	}
	half := time.Now().Add(time.Duration(*seconds * float64(time.Second) / 2))
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	for time.Now().Before(deadline) {
		hotA(2000000)
		hotB(1000000)
		allocate(100)
		if *heap0 != "" && time.Now().After(half) {
			runtime.GC()
			h, err := os.Create(*heap0)
			if err != nil {
				die("%v", err)
			}
			pprof.Lookup("heap").WriteTo(h, 0)
			h.Close()
			*heap0 = ""
		}
	}
	pprof.StopCPUProfile()
	f.Close()
	runtime.GC()
	h, err := os.Create(*heap)
	if err != nil {
		die("%v", err)
	}
	pprof.Lookup("heap").WriteTo(h, 0)
	h.Close()
}

// ---- notime: a pprof without time_nanos (field 9), as old SDKs sent them

func readVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	die("bad varint")
	return 0, 0
}

func notimeCmd(args []string) {
	fs := flag.NewFlagSet("notime", flag.ExitOnError)
	in := fs.String("in", "", "pprof (gzip or not)")
	out := fs.String("out", "", "plain pprof without time_nanos")
	fs.Parse(args)
	b := readFile(*in)
	if len(b) > 1 && b[0] == 0x1f && b[1] == 0x8b {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			die("%v", err)
		}
		b, _ = io.ReadAll(r)
	}
	var o []byte
	for i := 0; i < len(b); {
		key, n := readVarint(b[i:])
		start := i
		i += n
		switch key & 7 {
		case 0:
			_, n = readVarint(b[i:])
			i += n
		case 1:
			i += 8
		case 2:
			l, n := readVarint(b[i:])
			i += n + int(l)
		case 5:
			i += 4
		}
		if key>>3 != 9 {
			o = append(o, b[start:i]...)
		}
	}
	if err := os.WriteFile(*out, o, 0644); err != nil {
		die("%v", err)
	}
}

// ---- HTTP

type clientFlags struct {
	url, token, user, password, tenant, cacert, source string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "server URL (http://127.0.0.1:7070)")
	fs.StringVar(&c.token, "token", "", "bearer token")
	fs.StringVar(&c.user, "user", "", "basic auth user")
	fs.StringVar(&c.password, "password", "", "basic auth password")
	fs.StringVar(&c.tenant, "tenant", "", "X-Scope-OrgID")
	fs.StringVar(&c.cacert, "cacert", "", "PEM CA certificate for https")
	fs.StringVar(&c.source, "source", "", "local address to connect from")
}

func (c *clientFlags) client() *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	if c.cacert != "" {
		pem, err := os.ReadFile(c.cacert)
		if err != nil {
			die("%v", err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	if c.source != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(c.source)}}
		tr.DialContext = d.DialContext
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// as upstream/remote: basic auth when both are given, else the token
func (c *clientFlags) headers(r *http.Request) {
	if c.user != "" && c.password != "" {
		r.SetBasicAuth(c.user, c.password)
	} else if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.tenant != "" {
		r.Header.Set("X-Scope-OrgID", c.tenant)
	}
}

// prints the status and the body, as the tests read them
func send(cl *http.Client, r *http.Request) {
	resp, err := cl.Do(r)
	if err != nil {
		fmt.Printf("000 %v\n", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	extra := ""
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		extra = " retry-after=" + ra
	}
	fmt.Printf("%d%s %s\n", resp.StatusCode, extra, strings.TrimSpace(string(body)))
}

func readFile(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	return b
}

// ---- gosdk: pyroscope-go's upstream/remote uploadProfile

func gosdkCmd(args []string) {
	fs := flag.NewFlagSet("gosdk", flag.ExitOnError)
	var c clientFlags
	c.register(fs)
	name := fs.String("name", "", "application name with tags")
	profile := fs.String("profile", "", "pprof file")
	prev := fs.String("prev", "", "previous profile (older SDKs' prev_profile)")
	config := fs.String("config", "", "sample_type_config JSON")
	from := fs.Int64("from", 0, "start, ns")
	until := fs.Int64("until", 0, "end, ns")
	units := fs.String("units", "", "units")
	aggregation := fs.String("aggregation", "", "aggregationType")
	sampleRate := fs.Int("rate", 100, "sampleRate")
	fs.Parse(args)

	body := &bytes.Buffer{}
	w := multipart.NewWriter(body)
	fw, _ := w.CreateFormFile("profile", "profile.pprof")
	fw.Write(readFile(*profile))
	if *prev != "" {
		fw, _ = w.CreateFormFile("prev_profile", "profile.pprof")
		fw.Write(readFile(*prev))
	}
	if *config != "" {
		fw, _ = w.CreateFormFile("sample_type_config", "sample_type_config.json")
		fw.Write([]byte(*config))
	}
	w.Close()

	u, err := url.Parse(*&c.url)
	if err != nil {
		die("%v", err)
	}
	q := u.Query()
	q.Set("name", *name)
	q.Set("from", strconv.FormatInt(*from, 10))
	q.Set("until", strconv.FormatInt(*until, 10))
	q.Set("spyName", "gospy")
	q.Set("sampleRate", strconv.Itoa(*sampleRate))
	q.Set("units", *units)
	q.Set("aggregationType", *aggregation)
	u.Path = u.Path + "/ingest"
	u.RawQuery = q.Encode()
	r, _ := http.NewRequest(http.MethodPost, u.String(), body)
	r.Header.Set("Content-Type", w.FormDataContentType())
	c.headers(r)
	send(c.client(), r)
}

// ---- push: the Push API, protobuf encoded by hand (push.proto's numbers)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendBytes(b []byte, field int, data []byte) []byte {
	b = appendVarint(b, uint64(field<<3|2))
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

type series struct {
	labels   [][2]string
	profiles [][]byte
}

// "k=v,k=v" (a value may not hold ',')
func parseLabels(s string) [][2]string {
	var out [][2]string
	for _, kv := range strings.Split(s, ",") {
		if kv == "" {
			continue
		}
		i := strings.Index(kv, "=")
		if i < 0 {
			die("label %q is not k=v", kv)
		}
		out = append(out, [2]string{kv[:i], kv[i+1:]})
	}
	return out
}

func encodeProto(ss []series) []byte {
	var req []byte
	for _, s := range ss {
		var sb []byte
		for _, l := range s.labels {
			var lp []byte
			lp = appendBytes(lp, 1, []byte(l[0]))
			lp = appendBytes(lp, 2, []byte(l[1]))
			sb = appendBytes(sb, 1, lp)
		}
		for _, p := range s.profiles {
			var rs []byte
			rs = appendBytes(rs, 1, p)
			id := make([]byte, 16)
			rand.Read(id)
			rs = appendBytes(rs, 2, []byte(hex.EncodeToString(id)))
			sb = appendBytes(sb, 2, rs)
		}
		req = appendBytes(req, 1, sb)
	}
	return req
}

// protojson: lowerCamelCase names, bytes as base64
func encodeJSON(ss []series) []byte {
	type label struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	type sample struct {
		RawProfile string `json:"rawProfile"`
		ID         string `json:"ID"`
	}
	type js struct {
		Labels  []label  `json:"labels"`
		Samples []sample `json:"samples"`
	}
	var out struct {
		Series []js `json:"series"`
	}
	for _, s := range ss {
		var j js
		for _, l := range s.labels {
			j.Labels = append(j.Labels, label{l[0], l[1]})
		}
		for _, p := range s.profiles {
			j.Samples = append(j.Samples, sample{base64.StdEncoding.EncodeToString(p), "1"})
		}
		out.Series = append(out.Series, j)
	}
	b, _ := json.Marshal(out)
	return b
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func pushCmd(args []string) {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	var c clientFlags
	c.register(fs)
	format := fs.String("format", "proto", "proto or json")
	compress := fs.Bool("gzip", false, "Content-Encoding: gzip")
	var labels, profiles listFlag
	fs.Var(&labels, "labels", "a series' labels, k=v,k=v (repeat: one per series)")
	fs.Var(&profiles, "profile", "the series' profile files, f1+f2 (repeat: one per series)")
	fs.Parse(args)
	if len(labels) != len(profiles) {
		die("one -labels per -profile")
	}
	var ss []series
	for i := range labels {
		s := series{labels: parseLabels(labels[i])}
		for _, f := range strings.Split(profiles[i], "+") {
			s.profiles = append(s.profiles, readFile(f))
		}
		ss = append(ss, s)
	}
	var body []byte
	ct := "application/proto"
	if *format == "json" {
		body, ct = encodeJSON(ss), "application/json"
	} else {
		body = encodeProto(ss)
	}
	if *compress {
		body = gz(body)
	}
	r, _ := http.NewRequest(http.MethodPost, c.url+"/push.v1.PusherService/Push", bytes.NewReader(body))
	r.Header.Set("Content-Type", ct)
	r.Header.Set("Connect-Protocol-Version", "1")
	if *compress {
		r.Header.Set("Content-Encoding", "gzip")
	}
	c.headers(r)
	send(c.client(), r)
}

// ---- jfr: pyroscope-java's PyroscopeExporter (OkHttp MultipartBody.FORM)

func jfrCmd(args []string) {
	fs := flag.NewFlagSet("jfr", flag.ExitOnError)
	var c clientFlags
	c.register(fs)
	name := fs.String("name", "", "application name with static labels")
	file := fs.String("jfr", "", "JFR recording")
	labelsFile := fs.String("labels-file", "", "labels snapshot (protobuf), optional")
	compress := fs.Bool("gzip", true, "gzip the jfr part (the exporter's default compression level)")
	raw := fs.Bool("raw", false, "send the recording as the whole body, not multipart")
	from := fs.Int64("from", 0, "start, s")
	until := fs.Int64("until", 0, "end, s")
	event := fs.String("event", "itimer", "event type: units and aggregation follow it")
	rate := fs.Int("rate", 100, "profiling interval in Hz (cpu, itimer, wall)")
	fs.Parse(args)

	data := readFile(*file)
	if *compress {
		data = gz(data)
	}
	var body []byte
	ct := "application/octet-stream"
	if *raw {
		body = data
	} else {
		// OkHttp writes a Content-Length into each part, and a UUID boundary
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		id := make([]byte, 16)
		rand.Read(id)
		w.SetBoundary(hex.EncodeToString(id))
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="jfr"; filename="jfr"`)
		h.Set("Content-Length", strconv.Itoa(len(data)))
		pw, _ := w.CreatePart(h)
		pw.Write(data)
		if *labelsFile != "" {
			l := readFile(*labelsFile)
			if *compress {
				l = gz(l)
			}
			h = textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="labels"; filename="labels"`)
			h.Set("Content-Type", "application/x-protobuf")
			h.Set("Content-Length", strconv.Itoa(len(l)))
			pw, _ = w.CreatePart(h)
			pw.Write(l)
		}
		w.Close()
		body, ct = buf.Bytes(), w.FormDataContentType()
	}
	units, aggregation := "samples", "sum"
	switch *event {
	case "alloc":
		units = "objects"
	case "lock":
		units = "lock_samples"
	}
	u, err := url.Parse(c.url)
	if err != nil {
		die("%v", err)
	}
	u.Path += "/ingest"
	q := url.Values{}
	q.Add("name", *name)
	q.Add("units", units)
	q.Add("aggregationType", aggregation)
	q.Add("from", strconv.FormatInt(*from, 10))
	q.Add("until", strconv.FormatInt(*until, 10))
	q.Add("spyName", "javaspy")
	if *event == "cpu" || *event == "itimer" || *event == "wall" {
		q.Add("sampleRate", strconv.Itoa(*rate))
	}
	q.Add("format", "jfr")
	u.RawQuery = q.Encode()
	r, _ := http.NewRequest(http.MethodPost, u.String(), bytes.NewReader(body))
	r.Header.Set("Content-Type", ct)
	c.headers(r)
	send(c.client(), r)
}

// ---- slowloris: headers a byte at a time

func slowlorisCmd(args []string) {
	fs := flag.NewFlagSet("slowloris", flag.ExitOnError)
	addr := fs.String("addr", "", "host:port")
	source := fs.String("source", "127.0.0.2", "local address")
	conns := fs.Int("conns", 100, "connections")
	interval := fs.Duration("interval", 2*time.Second, "between bytes")
	seconds := fs.Duration("for", 20*time.Second, "how long")
	fs.Parse(args)
	header := []byte("POST /ingest?name=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nX-Slow: " +
		strings.Repeat("a", 10000))
	var wg sync.WaitGroup
	opened := 0
	end := time.Now().Add(*seconds)
	for i := 0; i < *conns; i++ {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*source)}, Timeout: 2 * time.Second}
		conn, err := d.Dial("tcp", *addr)
		if err != nil {
			continue
		}
		opened++
		wg.Add(1)
		go func(conn net.Conn) {
			defer wg.Done()
			defer conn.Close()
			for i := 0; time.Now().Before(end) && i < len(header); i++ {
				if _, err := conn.Write(header[i : i+1]); err != nil {
					return
				}
				time.Sleep(*interval)
			}
		}(conn)
	}
	fmt.Printf("opened %d\n", opened)
	wg.Wait()
}

// ---- load: profiles per second through the server

func loadCmd(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	var c clientFlags
	c.register(fs)
	file := fs.String("profile", "", "pprof file")
	clients := fs.Int("clients", 1, "concurrent clients")
	duration := fs.Duration("for", 10*time.Second, "how long")
	fs.Parse(args)
	data := readFile(*file)
	cl := c.client()
	var mu sync.Mutex
	var lat []float64
	failed := 0
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(*duration)
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for time.Now().Before(end) {
				body := &bytes.Buffer{}
				w := multipart.NewWriter(body)
				fw, _ := w.CreateFormFile("profile", "profile.pprof")
				fw.Write(data)
				w.Close()
				u := fmt.Sprintf("%s/ingest?name=bench%%7Bclient%%3D%d%%7D&spyName=gospy", c.url, i)
				r, _ := http.NewRequest(http.MethodPost, u, body)
				r.Header.Set("Content-Type", w.FormDataContentType())
				c.headers(r)
				t0 := time.Now()
				resp, err := cl.Do(r)
				ok := err == nil && resp.StatusCode == 200
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				d := time.Since(t0).Seconds()
				mu.Lock()
				if ok {
					lat = append(lat, d)
				} else {
					failed++
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	sort.Float64s(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(p*float64(len(lat)-1))] * 1000
	}
	fmt.Printf("profiles %d failed %d seconds %.3f p50_ms %.2f p99_ms %.2f\n", len(lat), failed, elapsed, pct(0.5), pct(0.99))
}

func main() {
	if len(os.Args) < 2 {
		die("usage: pushclient profile|gosdk|push|jfr|slowloris|load [flags]")
	}
	switch os.Args[1] {
	case "profile":
		profileCmd(os.Args[2:])
	case "notime":
		notimeCmd(os.Args[2:])
	case "gosdk":
		gosdkCmd(os.Args[2:])
	case "push":
		pushCmd(os.Args[2:])
	case "jfr":
		jfrCmd(os.Args[2:])
	case "slowloris":
		slowlorisCmd(os.Args[2:])
	case "load":
		loadCmd(os.Args[2:])
	default:
		die("unknown command %s", os.Args[1])
	}
}
