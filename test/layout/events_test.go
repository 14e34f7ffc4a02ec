package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// legacyRecorder is client-go's core-events recorder package; the product writes events.k8s.io/v1
// Events through internal/events.Recorder instead (issue #26).
const legacyRecorder = "k8s.io/client-go/tools/record"

// checkEvents returns the file's uses of the deprecated core-events recorder: a call of a manager's
// GetEventRecorderFor anywhere in the repository, or the tools/record package imported by product code.
func checkEvents(rel string, src []byte) ([]violation, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, 0)
	if err != nil {
		return nil, err
	}
	rel = filepath.ToSlash(rel)
	var out []violation
	if !strings.HasSuffix(rel, "_test.go") && inAny(rel, productDirs) {
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == legacyRecorder {
				out = append(out, violation{rel, "product code imports the core-events recorder " + legacyRecorder})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetEventRecorderFor" {
				out = append(out, violation{rel, fset.Position(call.Pos()).String() + ": GetEventRecorderFor writes core Events; use GetEventRecorder through events.NewRecorder"})
			}
		}
		return true
	})
	return out, nil
}

func TestNoCoreEventsRecorder(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	var found []violation
	err = walkModuleGoFiles(root, func(rel string, src []byte) error {
		v, err := checkEvents(rel, src)
		if err != nil {
			return err
		}
		files++
		found = append(found, v...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range found {
		t.Errorf("%s: %s", v.file, v.what)
	}
	if files < 200 {
		t.Fatalf("read %d Go files: the walk missed the tree", files)
	}
}

// The check itself, on sources that break and keep the rule.
func TestCheckEvents(t *testing.T) {
	for _, tc := range []struct {
		name, file, src string
		want            int
	}{
		{"the deprecated recorder in the product", "controllers/x.go", "package x\nfunc f(m interface{ GetEventRecorderFor(string) any }) { m.GetEventRecorderFor(\"x\") }\n", 1},
		{"the deprecated recorder in a test", "test/e2e/x_test.go", "package x\nfunc f(m interface{ GetEventRecorderFor(string) any }) { _ = m.GetEventRecorderFor(\"x\") }\n", 1},
		{"tools/record imported by the product", "internal/x/x.go", `package x; import _ "` + legacyRecorder + `"`, 1},
		{"tools/record in a test is a test's business", "controllers/x_test.go", `package x; import _ "` + legacyRecorder + `"`, 0},
		{"the events.k8s.io recorder", "controllers/setup.go", "package x\nfunc f(m interface{ GetEventRecorder(string) any }) { m.GetEventRecorder(\"x\") }\n", 0},
		{"the name in a string", "test/layout/x_test.go", "package x\nconst s = \"GetEventRecorderFor\"\n", 0},
	} {
		got, err := checkEvents(tc.file, []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}
