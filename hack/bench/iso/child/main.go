// Command child is the measured process of make bench-iso: it caches one ISO one way and prints one
// JSON measurement. It is a separate binary that does not link the simulator (the parent,
// hack/bench/iso, links and runs it), so its RSS is the cache's own.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// childConfig and measurement mirror the parent's types (JSON on the command line / stdout).
type childConfig struct {
	Mode        string // "A" or "B"
	ISOURL      string
	Credentials vsphere.Credentials
	Prefix      string
	Datacenter  string
	Datastore   string
}

type measurement struct {
	Mode          string  `json:"mode"`
	WallSeconds   float64 `json:"wallSeconds"`
	PeakRSSBytes  int64   `json:"peakRSSBytes"`
	StartRSSBytes int64   `json:"startRSSBytes"`
	BaseRSSBytes  int64   `json:"baseRSSBytes"`
	PeakAnonBytes int64   `json:"peakAnonBytes"`
	DiskWritten   int64   `json:"diskWrittenBytes"`
	TempFileBytes int64   `json:"tempFileBytes"`
	SHA256        string  `json:"sha256"`
	Path          string  `json:"path"`
	Bytes         int64   `json:"bytes"`
}

const childEnv = "AGENT_FORGE_BENCH_ISO_CHILD"

// startRSS is VmHWM when main starts (after package initialisation).
var startRSS int64

func main() {
	startRSS = peakRSS()
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-iso child:", err)
		os.Exit(1)
	}
	m, err := runChild(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-iso child:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(m)
}

func runChild(cfg childConfig) (*measurement, error) {
	ctx := context.Background()
	sessions := vsphere.NewSessions(vsphere.SessionOptions{})
	defer sessions.Close(ctx)
	client, err := sessions.Get(ctx, cfg.Credentials)
	if err != nil {
		return nil, err
	}
	baseRSS := peakRSS()
	writtenBefore := procIOWriteBytes()
	start := time.Now()
	var m *measurement
	switch cfg.Mode {
	case "A":
		m, err = downloadThenUpload(ctx, client, cfg)
	case "B":
		m, err = streaming(ctx, client, cfg)
	default:
		err = fmt.Errorf("unknown mode %q", cfg.Mode)
	}
	if err != nil {
		return nil, err
	}
	m.Mode = cfg.Mode
	m.WallSeconds = time.Since(start).Seconds()
	m.DiskWritten = procIOWriteBytes() - writtenBefore
	m.PeakRSSBytes = peakRSS()
	m.BaseRSSBytes = baseRSS
	m.StartRSSBytes = startRSS
	m.PeakAnonBytes = procField("/proc/self/status", "RssAnon:") * 1024
	return m, nil
}

// downloadThenUpload is the common way: spool to a local temp file while hashing, then upload it.
func downloadThenUpload(ctx context.Context, client vsphere.Client, cfg childConfig) (*measurement, error) {
	hc, err := iso.NewHTTPClient(iso.HTTPOptions{})
	if err != nil {
		return nil, err
	}
	resp, err := hc.Get(cfg.ISOURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	f, err := os.CreateTemp("", "bench-iso-*.iso")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), resp.Body)
	if err != nil {
		return nil, err
	}
	header := make([]byte, 40<<10)
	if _, err := f.ReadAt(header, 0); err != nil {
		return nil, fmt.Errorf("not an ISO (%w)", err)
	}
	if !iso.LooksLikeISO(header) {
		return nil, errors.New("not an ISO")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	digest := hex.EncodeToString(h.Sum(nil))
	final := iso.CachedISOPath(cfg.Datastore, cfg.Prefix, digest)
	if err := client.UploadISO(ctx, cfg.Datacenter, final, f, n); err != nil {
		return nil, err
	}
	return &measurement{SHA256: digest, Path: final, Bytes: n, TempFileBytes: n}, nil
}

// streaming is ours: one Refresh of the iso package.
func streaming(ctx context.Context, client vsphere.Client, cfg childConfig) (*measurement, error) {
	cache, err := iso.NewCache(iso.Options{Log: logr.Discard()})
	if err != nil {
		return nil, err
	}
	res, err := cache.Refresh(ctx, client, iso.RefreshRequest{Datacenter: cfg.Datacenter, Datastore: cfg.Datastore,
		Prefix: cfg.Prefix, Source: iso.Source{URL: cfg.ISOURL}, AllowPlainHTTP: true}) // the bench image server is plain HTTP
	if err != nil {
		return nil, err
	}
	return &measurement{SHA256: res.Status.SHA256, Path: res.Status.Path, Bytes: res.Status.SizeBytes}, nil
}

// peakRSS is VmHWM from /proc/self/status.
func peakRSS() int64 {
	return procField("/proc/self/status", "VmHWM:") * 1024
}

// procIOWriteBytes is write_bytes from /proc/self/io (bytes this process caused to be written to storage).
func procIOWriteBytes() int64 {
	return procField("/proc/self/io", "write_bytes:")
}

func procField(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return -1
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	return -1
}
