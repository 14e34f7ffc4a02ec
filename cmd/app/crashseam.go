//go:build crashpoints

package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// crashSeamWait bounds how long one crash point waits for the campaign's answer: a campaign that hangs
// or went away lets the process carry on instead of holding a worker for good.
const crashSeamWait = 2 * time.Minute

// The crash campaign's seam, compiled only with the build tag crashpoints (test/chaos builds the manager
// binary with it; `make build` and the Dockerfile do not, see crashseam_off.go).

// CrashPointsCompiled is true in a build that carries the seam.
const CrashPointsCompiled = true

// crashSeamFromEnv returns the socket seam when CrashPointSocketEnv is set, else nil.
func crashSeamFromEnv() func(context.Context, string, types.NamespacedName) {
	path := os.Getenv(CrashPointSocketEnv)
	if path == "" {
		return nil
	}
	return socketSeam{path: path, pid: os.Getpid()}.hit
}

// socketSeam is the process side of the crash-point protocol: per hit, one connection to the socket,
// one line "<pid> <point> <namespace>/<name>\n" from the process, and one line back ("continue"), or
// no answer at all: the campaign SIGKILLs the process while it waits.
type socketSeam struct {
	path string
	pid  int
}

func (s socketSeam) hit(ctx context.Context, point string, key types.NamespacedName) {
	ctx, cancel := context.WithTimeout(ctx, crashSeamWait)
	defer cancel()
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "unix", s.path)
	if err != nil {
		return // no campaign listening: carry on
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // the manager stops or the wait ends
	defer stop()
	if _, err := fmt.Fprintf(conn, "%d %s %s\n", s.pid, point, key); err != nil {
		return
	}
	_, _ = bufio.NewReader(conn).ReadString('\n') // blocks until "continue" (or the kill)
}
