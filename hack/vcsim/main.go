// Command vcsim runs govmomi's vCenter simulator with agent-forge's inventory, lock-question VM type,
// fault hooks and the cluster-modules API (vapi/cluster/simulator, registered by test/vcsim) in its own
// process, plus a loopback control endpoint; vcsim.StartProcess starts it (rebuilding it with `go build`
// once per test process, so it always carries the current sources) for the tests, the demo and benchmarks (see test/vcsim/control.go). It prints one ready line
// ("VCSIM-READY {json}") on stdout, and exits on SIGTERM/SIGINT or when its stdin reaches EOF (the parent
// closed it or died).
//
//	go build -o bin/vcsim ./hack/vcsim && bin/vcsim -options '{"Delay":{"Delay":5}}' </dev/tty
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func main() {
	os.Exit(serve())
}

// serve is main's body; it returns the exit code, so that its deferred calls run before the process exits.
func serve() int {
	optJSON := flag.String("options", "{}", "vcsim.Options as JSON")
	flag.Parse()
	var opts vcsim.Options
	if err := json.Unmarshal([]byte(*optJSON), &opts); err != nil {
		fmt.Fprintf(os.Stderr, "vcsim: -options: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // the parent holds our stdin open for as long as it wants us
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := vcsim.Serve(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "vcsim: %v\n", err)
		return 1
	}
	return 0
}
