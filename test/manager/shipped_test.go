package manager

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/cmd/app"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// crashSeamMarks are what the crash-point seam puts in a binary: its socket protocol's functions and
// the name of the environment variable that switches it on.
var crashSeamMarks = []string{"cmd/app.socketSeam", app.CrashPointSocketEnv}

// TestShippedBinaryLacksCrashSeam builds cmd/ exactly as `make build` does (its recipe, read from the
// Makefile) and proves the binary has no crash-point seam: no -tags in its build settings, no seam
// function in its symbol table and not even the environment variable's name in its bytes, so setting
// it does nothing. The Dockerfile's build must use no build tag either. The same check on a build with
// the crashpoints tag finds the seam: the check can fail.
func TestShippedBinaryLacksCrashSeam(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^build:.*\n\t(.+)$`).FindSubmatch(makefile)
	if recipe == nil {
		t.Fatal("Makefile: no recipe for build")
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(dockerfile, []byte("go build")) || bytes.Contains(dockerfile, []byte("-tags")) {
		t.Fatal("Dockerfile: the manager must be built with go build and no build tags")
	}

	shipped := buildAsMakefile(t, root, string(recipe[1]))
	if found := crashSeamIn(t, shipped); len(found) > 0 {
		t.Fatalf("the shipped binary carries the crash-point seam: %s", strings.Join(found, "; "))
	}
	tagged := buildAsMakefile(t, root, string(recipe[1]), "-tags", "crashpoints")
	if found := crashSeamIn(t, tagged); len(found) < 3 {
		t.Fatalf("a crashpoints build shows only %q: the check cannot tell the builds apart", found)
	}
}

// buildAsMakefile runs the Makefile's build recipe (leading VAR=value assignments are its environment),
// with the output in a temporary directory and extra flags before the package.
func buildAsMakefile(t *testing.T, root, recipe string, extra ...string) string {
	t.Helper()
	fields := strings.Fields(recipe)
	var env []string
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		env, fields = append(env, fields[0]), fields[1:]
	}
	if len(fields) < 3 || fields[0] != "go" || fields[1] != "build" || fields[len(fields)-1] != "./cmd" {
		t.Fatalf("Makefile build recipe %q is not `go build ... ./cmd`", recipe)
	}
	out := filepath.Join(t.TempDir(), "manager")
	args := fields[1 : len(fields)-1]
	for i := range args {
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	args = append(append(append([]string(nil), args...), extra...), "./cmd")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, output)
	}
	return out
}

// crashSeamIn lists every trace of the seam in the binary at path.
func crashSeamIn(t *testing.T, path string) []string {
	t.Helper()
	var found []string
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" && strings.Contains(s.Value, "crashpoints") {
			found = append(found, "build setting -tags="+s.Value)
		}
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("reading the symbol table (the Makefile's build keeps it): %v", err)
	}
	for _, s := range syms {
		if strings.Contains(s.Name, crashSeamMarks[0]) {
			found = append(found, "symbol "+s.Name)
			break
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, mark := range crashSeamMarks {
		if bytes.Contains(data, []byte(mark)) {
			found = append(found, "bytes "+mark)
		}
	}
	return found
}
