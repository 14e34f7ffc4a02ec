// Command iso benchmarks the discovery ISO cache (make bench-iso): a generated 1 GiB ISO served by a
// loopback HTTP server is cached into the vSphere simulator's datastore two ways, each in a child
// process of this binary so its peak RSS and disk writes are its own:
//
//	(A) download-then-upload: download to a temporary file while hashing, then upload the file;
//	(B) streaming (internal/iso): hash and validate while the bytes flow straight into the upload.
//
// The simulator and the HTTP server run in this (parent) process; the simulator's datastore is a
// local folder, and its writes are not counted as the cache's temp disk. The measured child is
// ./child, built by this command, rather than a re-exec of this binary: linking the simulator adds
// ~15 MiB of RSS at start-up that is no part of the cache.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// childEnv carries the child's instructions (the simulator's test credentials, no real secret).
const childEnv = "AGENT_FORGE_BENCH_ISO_CHILD"

type childConfig struct {
	Mode        string // "A" or "B"
	ISOURL      string
	Credentials vsphere.Credentials
	Prefix      string
	Datacenter  string
	Datastore   string
}

// measurement is what a child reports on stdout as one JSON line.
type measurement struct {
	Mode          string  `json:"mode"`
	WallSeconds   float64 `json:"wallSeconds"`
	PeakRSSBytes  int64   `json:"peakRSSBytes"`     // VmHWM at the end
	StartRSSBytes int64   `json:"startRSSBytes"`    // VmHWM when main starts (package initialisation done)
	BaseRSSBytes  int64   `json:"baseRSSBytes"`     // VmHWM after the vCenter login, before the transfer
	PeakAnonBytes int64   `json:"peakAnonBytes"`    // RssAnon at the end
	DiskWritten   int64   `json:"diskWrittenBytes"` // /proc/self/io write_bytes delta
	TempFileBytes int64   `json:"tempFileBytes"`    // size of the local temp file (A), 0 for B
	SHA256        string  `json:"sha256"`
	Path          string  `json:"path"`
	Bytes         int64   `json:"bytes"`
}

func main() {
	sizeMiB := flag.Int64("size-mib", 1024, "ISO size in MiB")
	rounds := flag.Int("rounds", 2, "runs of each way (alternating A, B); the fastest of each counts")
	childBin := flag.String("child", "", "prebuilt ./child binary (default: build it)")
	flag.Parse()
	if err := runParent(*sizeMiB<<20, *rounds, *childBin); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench-iso:", err)
	os.Exit(1)
}

func runParent(size int64, rounds int, childBin string) error {
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		return err
	}
	defer env.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newISOHandler(size), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()
	isoURL := fmt.Sprintf("http://%s/images/bench/minimal.iso?api_key=bench-token-not-secret", ln.Addr())

	self := childBin
	if self == "" {
		bin, cleanup, err := buildChild()
		if err != nil {
			return err
		}
		defer cleanup()
		self = bin
	}
	fmt.Printf("bench-iso: %d MiB ISO from %s, simulator %s, %d round(s)\n", size>>20, ln.Addr(), env.URL.Host, rounds)
	best := map[string]*measurement{}
	// Memory and disk are reported as the worst round of each way, time as the fastest.
	worstRSS, worstTemp := map[string]int64{}, map[string]int64{}
	for r := 0; r < rounds; r++ {
		for _, mode := range []string{"A", "B"} {
			cfg := childConfig{Mode: mode, ISOURL: isoURL, Credentials: env.Credentials, Prefix: fmt.Sprintf("bench/%s-%d", mode, r),
				Datacenter: vcsim.Datacenter, Datastore: vcsim.Datastore}
			m, err := runOne(self, cfg)
			if err != nil {
				return fmt.Errorf("way %s: %w", mode, err)
			}
			fmt.Printf("  %s round %d: %6.2fs %6.1f MiB/s  peak RSS %5.1f MiB (%.1f at start, %.1f after login)  disk written %6.1f MiB  temp file %6.1f MiB  sha256 %s\n",
				label(mode), r+1, m.WallSeconds, float64(m.Bytes)/(1<<20)/m.WallSeconds, mib(m.PeakRSSBytes), mib(m.StartRSSBytes), mib(m.BaseRSSBytes), mib(m.DiskWritten), mib(m.TempFileBytes), m.SHA256[:12])
			worstRSS[mode] = max(worstRSS[mode], m.PeakRSSBytes)
			worstTemp[mode] = max(worstTemp[mode], m.DiskWritten, m.TempFileBytes)
			if b := best[mode]; b == nil || m.WallSeconds < b.WallSeconds {
				best[mode] = m
			}
			// Free the simulator's disk between runs.
			c, err := vsphere.NewSessions(vsphere.SessionOptions{}).Get(context.Background(), env.Credentials)
			if err == nil {
				_ = c.DeleteFile(context.Background(), vcsim.Datacenter, m.Path)
			}
		}
	}
	a, b := best["A"], best["B"]
	if a.SHA256 != b.SHA256 {
		return fmt.Errorf("digests differ: %s vs %s", a.SHA256, b.SHA256)
	}
	fmt.Printf("(A) download-then-upload: %.2fs (fastest of %d), peak RSS %.1f MiB, %.1f MiB temp disk (worst round)\n",
		a.WallSeconds, rounds, mib(worstRSS["A"]), mib(worstTemp["A"]))
	fmt.Printf("(B) streaming (ours):     %.2fs (fastest of %d), peak RSS %.1f MiB, %.1f MiB temp disk (worst round)\n",
		b.WallSeconds, rounds, mib(worstRSS["B"]), mib(worstTemp["B"]))
	fmt.Printf("iso cache: %.2fx faster than download-then-upload, peak RSS %.0f MiB, %.0f MiB temp disk\n",
		a.WallSeconds/b.WallSeconds, mib(worstRSS["B"]), mib(worstTemp["B"]))
	return nil
}

// buildChild builds ./child into a temporary folder with the flags of the shipped manager image
// (Dockerfile: CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), so the measured process is built like
// the operator that runs the cache.
func buildChild() (string, func(), error) {
	dir, err := os.MkdirTemp("", "bench-iso-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "child")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/containeroo/agent-forge-operator/hack/bench/iso/child")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building the child: %w", err)
	}
	return bin, cleanup, nil
}

func label(mode string) string {
	if mode == "A" {
		return "(A) download-then-upload"
	}
	return "(B) streaming           "
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func runOne(self string, cfg childConfig) (*measurement, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var m measurement
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &m); err == nil && m.Mode != "" {
			return &m, nil
		}
	}
	return nil, fmt.Errorf("no measurement in child output: %s", out)
}
