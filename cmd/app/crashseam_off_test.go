//go:build !crashpoints

package app

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestShippedBuildIgnoresTheCrashPointEnv: without the build tag, a campaign's socket named in the
// environment installs no seam and is never dialled.
func TestShippedBuildIgnoresTheCrashPointEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	t.Setenv(CrashPointSocketEnv, path)
	if CrashPointsCompiled {
		t.Fatal("CrashPointsCompiled in a build without the crashpoints tag")
	}
	if crashSeamFromEnv() != nil {
		t.Fatalf("a seam with %s set in the shipped build", CrashPointSocketEnv)
	}
	accepted := make(chan struct{})
	go func() {
		if c, err := ln.Accept(); err == nil {
			_ = c.Close()
			close(accepted)
		}
	}()
	select {
	case <-accepted:
		t.Fatal("the shipped build dialled the crash-point socket")
	case <-time.After(100 * time.Millisecond):
	}
}
