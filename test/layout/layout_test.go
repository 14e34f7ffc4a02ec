// Package layout checks the project's layers: the product (api/, cmd/, controllers/, internal/) never
// depends on the test world (test/: the world driver, the harness, CAPI core's launcher, the ISO server,
// envtest, the vCenter simulator and the vSphere fake), and the test world reaches the product only
// through its exported API, never by a back door.
package layout

import (
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

const module = "github.com/containeroo/agent-forge-operator"

// productDirs hold the product's packages; their non-test files build the manager binary.
var productDirs = []string{"api", "cmd", "controllers", "internal"}

// violation is one import or directive that breaks the layers, with what it breaks.
type violation struct{ file, what string }

// checkFile returns the file's layer violations: a product file importing the test world, or any file
// using go:linkname (reaching unexported identifiers of another package) or importing unsafe outside
// the product.
func checkFile(rel string, src []byte) ([]violation, error) {
	f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	rel = filepath.ToSlash(rel)
	product := !strings.HasSuffix(rel, "_test.go") && inAny(rel, productDirs)
	var out []violation
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if product && (path == module+"/test" || strings.HasPrefix(path, module+"/test/")) {
			out = append(out, violation{rel, "product code imports the test world " + path})
		}
		if !product && path == "unsafe" {
			out = append(out, violation{rel, "the test world imports unsafe"})
		}
	}
	for _, group := range f.Comments {
		for _, c := range group.List {
			if strings.HasPrefix(c.Text, "//go:linkname ") {
				out = append(out, violation{rel, "go:linkname reaches another package's unexported identifiers"})
			}
		}
	}
	return out, nil
}

func inAny(rel string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

func TestProductNeverImportsTheTestWorld(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, productFiles := 0, 0
	var found []violation
	err = walkModuleGoFiles(root, func(rel string, src []byte) error {
		v, err := checkFile(rel, src)
		if err != nil {
			return err
		}
		files++
		if !strings.HasSuffix(rel, "_test.go") && inAny(filepath.ToSlash(rel), productDirs) {
			productFiles++
		}
		found = append(found, v...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range found {
		t.Errorf("%s: %s", v.file, v.what)
	}
	// A walk that saw nothing would pass vacuously.
	if productFiles < 50 || files < 200 {
		t.Fatalf("read %d Go files, %d of them product code: the walk missed the tree", files, productFiles)
	}
	t.Logf("%d Go files read, %d product files: %d layer violations", files, productFiles, len(found))
}

// The check itself, on sources that break and keep the rules.
func TestCheckFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, src string
		want            int
	}{
		{"product importing the world", "controllers/x.go", `package controllers; import _ "` + module + `/test/sim/world"`, 1},
		{"product importing the test root", "internal/x/x.go", `package x; import _ "` + module + `/test"`, 1},
		{"product test importing the world is a test", "controllers/x_test.go", `package controllers_test; import _ "` + module + `/test/sim/world"`, 0},
		{"test world importing the product", "test/sim/world/x.go", `package world; import _ "` + module + `/internal/agents"`, 0},
		{"a look-alike module path", "cmd/x.go", `package main; import _ "` + module + `/testing"`, 0},
		{"linkname in the test world", "test/sim/x.go", "package sim\n\nimport _ \"unsafe\"\n\n//go:linkname f " + module + "/controllers.f\nfunc f()\n", 2},
		{"unsafe in the product is the product's business", "internal/x/x.go", `package x; import _ "unsafe"`, 0},
	} {
		got, err := checkFile(tc.file, []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}

// walkModuleGoFiles calls visit with every Go file of the module (its path relative to root), skipping
// build output and the other modules under hack/.
func walkModuleGoFiles(root string, visit func(rel string, src []byte) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch filepath.ToSlash(rel) {
			case "bin", ".git", "hack/peers", "hack/crdgen", "hack/tools": // build output, other modules
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return visit(rel, src)
	})
}
