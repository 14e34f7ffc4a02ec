package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memSample is one reading of the manager process.
type memSample struct {
	rss, hwm, anon       uint64 // /proc/<pid>/status VmRSS, VmHWM (peak RSS) and RssAnon (RSS less mapped files), bytes
	heapInuse, heapAlloc uint64 // the manager's go_memstats_heap_inuse_bytes and heap_alloc_bytes
}

// peaks holds the largest of every figure seen.
type peaks struct {
	mu sync.Mutex
	memSample
}

func (p *peaks) add(s memSample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rss, p.hwm, p.anon = max(p.rss, s.rss), max(p.hwm, s.hwm), max(p.anon, s.anon)
	p.heapInuse, p.heapAlloc = max(p.heapInuse, s.heapInuse), max(p.heapAlloc, s.heapAlloc)
}

func (p *peaks) get() memSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.memSample
}

// sampleProcess reads pid's memory every interval until ctx ends, adding each reading to p.
func sampleProcess(ctx context.Context, pid int, metricsURL string, every time.Duration, p *peaks) {
	hc := &http.Client{Timeout: 2 * time.Second}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if s, err := readSample(ctx, hc, pid, metricsURL); err == nil {
			p.add(s)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// readSample reads the process's status and its metrics (hc nil: a client with a 2 s timeout).
func readSample(ctx context.Context, hc *http.Client, pid int, metricsURL string) (memSample, error) {
	var s memSample
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Second}
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	s.rss, s.hwm, s.anon = procStatus(f)
	_ = f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return s, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return s, err
	}
	defer func() { _ = resp.Body.Close() }()
	m := gauges(resp.Body, "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes")
	s.heapInuse, s.heapAlloc = uint64(m["go_memstats_heap_inuse_bytes"]), uint64(m["go_memstats_heap_alloc_bytes"])
	return s, nil
}

// procStatus returns VmRSS, VmHWM and RssAnon from a /proc/<pid>/status text, in bytes (the kernel
// writes kB).
func procStatus(r io.Reader) (rss, hwm, anon uint64) {
	fields := map[string]*uint64{"VmRSS": &rss, "VmHWM": &hwm, "RssAnon": &anon}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(val)
		if dst := fields[key]; ok && dst != nil && len(f) > 0 {
			kb, _ := strconv.ParseUint(f[0], 10, 64)
			*dst = kb << 10
		}
	}
	return rss, hwm, anon
}

// gauges reads the named unlabelled samples from a Prometheus text exposition.
func gauges(r io.Reader, names ...string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					out[n] = v
				}
			}
		}
	}
	return out
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
