package planner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// plannerPath is this package's import path.
const plannerPath = "github.com/containeroo/agent-forge-operator/internal/planner"

// decisionTypes are the types a plan's decisions are made of: only the planner builds them.
var decisionTypes = map[string]bool{"Decisions": true, "Release": true, "Action": true}

// TestOnlyThePlannerDecides: the pool controller gathers a Snapshot and carries out the Decisions, it
// decides nothing. No non-test Go file under controllers/ or internal/ (but internal/planner) may build
// a decision value: a composite literal or new() of planner.Decisions, planner.Release or
// planner.Action (also as the element of a slice, array or map literal).
func TestOnlyThePlannerDecides(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	var offenders []string
	for _, dir := range []string{"controllers", "internal"} {
		srcs, err := goSources(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for rel, src := range srcs {
			if dir == "internal" && strings.HasPrefix(rel, "planner/") {
				continue
			}
			files++
			found, err := decisionsBuilt(dir+"/"+rel, src)
			if err != nil {
				t.Fatal(err)
			}
			offenders = append(offenders, found...)
		}
	}
	sort.Strings(offenders)
	if files < 50 {
		t.Fatalf("scanned only %d Go files: the walk is broken", files)
	}
	for _, o := range offenders {
		t.Errorf("builds a plan decision outside the planner (only planner.Plan decides): %s", o)
	}
	t.Logf("scanned %d Go files", files)
}

// TestDecisionsBuiltCatchesViolations shows the check can fail: each source builds (or does not build)
// a decision outside the planner.
func TestDecisionsBuiltCatchesViolations(t *testing.T) {
	const imp = `import "` + plannerPath + `"` + "\n"
	tests := []struct {
		name, src string
		want      int
	}{
		{"an Action literal", imp + `func f() any { return planner.Action{Kind: "Wait"} }`, 1},
		{"a pointer to a Release literal", imp + `func f() any { return &planner.Release{Name: "vm"} }`, 1},
		{"a whole Decisions value", imp + `var d = planner.Decisions{}`, 1},
		{"new() of a decision", imp + `func f() any { return new(planner.Action) }`, 1},
		{"appended to a plan's actions", imp + `func f(d *planner.Decisions) { d.Actions = append(d.Actions, planner.Action{}) }`, 1},
		{"elements of a slice literal", imp + `var a = []planner.Action{{Kind: "Create"}, {Kind: "Delete"}}`, 1},
		{"values of a map literal", imp + `var m = map[string]planner.Release{"a": {}}`, 1},
		{"under another import name", `import p "` + plannerPath + `"` + "\n" + `var r = p.Release{}`, 1},
		{"dot-imported", `import . "` + plannerPath + `"` + "\n" + `var r = Release{}`, 1},
		{"reading a plan is fine", imp + `func f(d planner.Decisions) int { return len(d.Releases) + len(d.Actions) }`, 0},
		{"building a Snapshot is fine", imp + `var s = planner.Snapshot{Waiting: 1, VMs: []planner.VM{{}}}`, 0},
		{"another package's Action is fine", `import "example.com/other/planner"` + "\n" + `var a = planner.Action{}`, 0},
		{"a local type of the same name is fine", `type Action struct{}` + "\n" + `var a = Action{}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decisionsBuilt("x.go", []byte("package x\n"+tt.src+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("found %d violation(s) %v, want %d", len(got), got, tt.want)
			}
		})
	}
}

// decisionsBuilt returns "file:line: type" for every decision value src builds.
func decisionsBuilt(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	// The names this file reaches the planner by ("." for a dot import).
	local := map[string]bool{}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == plannerPath {
			n := "planner"
			if imp.Name != nil {
				n = imp.Name.Name
			}
			local[n] = true
		}
	}
	if len(local) == 0 {
		return nil, nil
	}
	// decision names the decision type an expression denotes ("" for none); composite literal types
	// are looked through to their elements.
	var decision func(ast.Expr) string
	decision = func(e ast.Expr) string {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && local[id.Name] && decisionTypes[x.Sel.Name] {
				return x.Sel.Name
			}
		case *ast.Ident:
			if local["."] && decisionTypes[x.Name] {
				return x.Name
			}
		case *ast.StarExpr:
			return decision(x.X)
		case *ast.ArrayType:
			return decision(x.Elt)
		case *ast.MapType:
			return decision(x.Value)
		}
		return ""
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		var typ string
		switch x := n.(type) {
		case *ast.CompositeLit:
			if x.Type != nil {
				typ = decision(x.Type)
			}
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "new" && len(x.Args) == 1 {
				typ = decision(x.Args[0])
			}
		}
		if typ != "" {
			out = append(out, fset.Position(n.Pos()).String()+": "+typ)
			return false // elided element literals inside are the same violation
		}
		return true
	})
	sort.Strings(out)
	return out, nil
}
