//go:build crashpoints

package app

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestNoCrashSeamWithoutTheEnv(t *testing.T) {
	t.Setenv(CrashPointSocketEnv, "")
	if crashSeamFromEnv() != nil {
		t.Fatal("a seam without " + CrashPointSocketEnv)
	}
}

// listen serves the campaign's side on a fresh socket and returns it with the env set.
func listen(t *testing.T) net.Listener {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crash.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	t.Setenv(CrashPointSocketEnv, path)
	return ln
}

func TestCrashSeamAnnouncesAndWaitsForTheAnswer(t *testing.T) {
	ln := listen(t)
	seam := crashSeamFromEnv()
	if seam == nil {
		t.Fatal("no seam with the env set")
	}
	returned := make(chan struct{})
	go func() {
		seam(context.Background(), "vm-created", types.NamespacedName{Namespace: "ns", Name: "va"})
		close(returned)
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(os.Getpid()) + " vm-created ns/va\n"; line != want {
		t.Fatalf("announced %q, want %q", line, want)
	}
	select {
	case <-returned:
		t.Fatal("the point returned before the campaign answered")
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := conn.Write([]byte("continue\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("the point did not return after the answer")
	}
}

func TestCrashSeamEndsWithItsContext(t *testing.T) {
	ln := listen(t)
	seam := crashSeamFromEnv()
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		seam(ctx, "agent-patched", types.NamespacedName{Namespace: "ns", Name: "va"})
		close(returned)
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if line, _ := bufio.NewReader(conn).ReadString('\n'); !strings.Contains(line, "agent-patched") {
		t.Fatalf("announced %q", line)
	}
	cancel() // the manager stops: the waiting pass is let go
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("the point kept waiting after its context ended")
	}
}

func TestCrashSeamWithoutAListenerCarriesOn(t *testing.T) {
	t.Setenv(CrashPointSocketEnv, filepath.Join(t.TempDir(), "nobody.sock"))
	done := make(chan struct{})
	go func() {
		crashSeamFromEnv()(context.Background(), "vm-created", types.NamespacedName{})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a seam without a listener blocked")
	}
}
