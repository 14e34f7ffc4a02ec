// Package manager builds the operator binary and runs it as a real process against an envtest API
// server: probes, metrics (plain and authenticated), leader election, clean shutdown on SIGTERM, and a
// start before the external CRDs exist.
package manager

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

var (
	// managerBinary is the path of the binary built once for the package.
	managerBinary string
	// env is the API server with our CRDs and the external CRD fixtures, shared by the package.
	env *testenv.Env
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime; the manager's own output is what matters
	dir, err := os.MkdirTemp("", "agent-forge-manager-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if managerBinary, err = buildManager(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	return m.Run()
}

// buildManager compiles ./cmd exactly as `make build` does, so the test runs the shipped entry point.
func buildManager(dir string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "manager")
	start := time.Now()
	// Same build flags as this test binary, so the compiled dependencies come from the build cache.
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd")...)
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, output)
	}
	fmt.Fprintf(os.Stderr, "built the manager in %s\n", time.Since(start).Round(time.Millisecond))
	return out, nil
}
