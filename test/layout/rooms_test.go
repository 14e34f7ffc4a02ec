package layout

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// maxLines is how long a Go file under controllers/ or internal/ may grow before it must say why
// (a "// file-length: <reason>" comment): past that a file usually holds more than one responsibility.
const maxLines = 600

// fileLengthMarker is the comment that lets a file stay longer than maxLines; a reason must follow it.
const fileLengthMarker = "// file-length:"

// siblings are controller packages that must not import each other: the pool decides how many VMs, the
// VsphereAgent runs one VM; what both need lives below them (internal/poolspec, internal/events,
// internal/poolmemory, controllers/config, controllers/watch, ...).
var siblings = [][2]string{{"controllers/pool", "controllers/vsphereagent"}}

// tooLong returns why src (lines long) breaks the length rule ("" when it does not).
func tooLong(src []byte) string {
	lines := 0
	justified := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		lines++
		line := strings.TrimSpace(sc.Text())
		if reason, ok := strings.CutPrefix(line, fileLengthMarker); ok && strings.TrimSpace(reason) != "" {
			justified = true
		}
	}
	if lines <= maxLines || justified {
		return ""
	}
	return strconv.Itoa(lines) + " lines (more than " + strconv.Itoa(maxLines) + ") without a " + fileLengthMarker + " comment saying why"
}

// forbiddenImports returns the imports of a file in package dir (a path relative to the repository)
// that break the layering: a sibling controller package, the controllers package that wires them, a
// controller imported from internal/ (the domain sits below the controllers), or the manager's wiring
// (cmd/ and below) imported from controllers/ or internal/: every one an arrow pointing up.
func forbiddenImports(dir string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), dir+"/x.go", src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		for _, pair := range siblings {
			for i := range pair {
				if dir == pair[i] && path == module+"/"+pair[1-i] {
					out = append(out, dir+" imports its sibling "+pair[1-i])
				}
			}
		}
		if strings.HasPrefix(dir, "controllers/") && path == module+"/controllers" {
			out = append(out, dir+" imports the controllers package that wires it")
		}
		if strings.HasPrefix(dir, "internal/") && (path == module+"/controllers" || strings.HasPrefix(path, module+"/controllers/")) {
			out = append(out, dir+" imports the controller package "+strings.TrimPrefix(path, module+"/")+" above it")
		}
		if (dir == "controllers" || strings.HasPrefix(dir, "controllers/") || strings.HasPrefix(dir, "internal/")) &&
			(path == module+"/cmd" || strings.HasPrefix(path, module+"/cmd/")) {
			out = append(out, dir+" imports the manager's wiring "+strings.TrimPrefix(path, module+"/"))
		}
	}
	return out, nil
}

// TestRoomsStayRooms walks controllers/ and internal/: no Go file longer than maxLines without saying
// why, and no package importing one above it (a sibling controller, the controllers package, the
// manager's wiring in cmd/).
func TestRoomsStayRooms(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, subpackages := 0, map[string]bool{}
	eachGoFile(t, root, func(rel string, src []byte) error {
		files++
		if why := tooLong(src); why != "" {
			t.Errorf("%s: %s", rel, why)
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if strings.HasPrefix(dir, "controllers/") {
			subpackages[dir] = true
		}
		bad, err := forbiddenImports(dir, src)
		if err != nil {
			return err
		}
		for _, b := range bad {
			t.Errorf("%s: %s", rel, b)
		}
		return nil
	})
	for _, pair := range siblings {
		for _, p := range pair {
			if !subpackages[p] {
				t.Errorf("%s not found: the walk missed it, or the check names a package that moved", p)
			}
		}
	}
	if files < 100 {
		t.Fatalf("read %d Go files: the walk missed the tree", files)
	}
	t.Logf("%d Go files read, %d controller subpackages", files, len(subpackages))
}

// The checks themselves, on sources that break and keep the rules.
func TestRoomChecks(t *testing.T) {
	long := strings.Repeat("// x\n", maxLines+1)
	for _, tc := range []struct {
		name string
		src  string
		bad  bool
	}{
		{"short", "package x\n", false},
		{"exactly the limit", strings.Repeat("// x\n", maxLines), false},
		{"too long", long, true},
		{"too long, with a reason", fileLengthMarker + " one table of every reason\n" + long, false},
		{"too long, a marker without a reason", fileLengthMarker + "\n" + long, true},
	} {
		if got := tooLong([]byte(tc.src)) != ""; got != tc.bad {
			t.Errorf("%s: too long %t, want %t", tc.name, got, tc.bad)
		}
	}
	for _, tc := range []struct {
		name, dir, src string
		want           int
	}{
		{"pool importing vsphereagent", "controllers/pool", `package pool; import _ "` + module + `/controllers/vsphereagent"`, 1},
		{"vsphereagent importing pool", "controllers/vsphereagent", `package vsphereagent; import _ "` + module + `/controllers/pool"`, 1},
		{"a controller importing the wiring", "controllers/ejection", `package ejection; import _ "` + module + `/controllers"`, 1},
		{"a controller importing config and poolspec", "controllers/pool", `package pool; import (_ "` + module + `/controllers/config"; _ "` + module + `/internal/poolspec")`, 0},
		{"the wiring importing both", "controllers", `package controllers; import (_ "` + module + `/controllers/pool"; _ "` + module + `/controllers/vsphereagent")`, 0},
		{"the domain importing the controllers", "internal/planner", `package planner; import _ "` + module + `/controllers"`, 1},
		{"the domain importing a controller", "internal/agents", `package agents; import _ "` + module + `/controllers/config"`, 1},
		{"a controller importing the manager's wiring", "controllers/pool", `package pool; import _ "` + module + `/cmd/app"`, 1},
		{"the domain importing the manager's wiring", "internal/vsphere", `package vsphere; import _ "` + module + `/cmd/app"`, 1},
		{"the manager's wiring importing the controllers", "cmd/app", `package app; import _ "` + module + `/controllers"`, 0},
	} {
		got, err := forbiddenImports(tc.dir, []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}

// eachGoFile calls fn with the repository-relative path (slash-separated) and the source of every Go file
// under controllers/ and internal/; an error from the walk or from fn fails the test.
func eachGoFile(t *testing.T, root string, fn func(rel string, src []byte) error) {
	t.Helper()
	for _, top := range []string{"controllers", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			return fn(filepath.ToSlash(rel), src)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
