// Package peers checks how the project's tests and demo use the real peers they run.
package peers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// hyperShiftRenders are the functions (file:function) that play HyperShift's NodePool controller where
// it creates a MachineSet itself (upgradeType InPlace): allowed to create one.
var hyperShiftRenders = map[string]bool{"test/sim/world/inplace.go:ensureMachineSet": true}

// machineKinds are the names through which the code builds a Machine or MachineSet object.
var machineKinds = []string{"MachineGVK", "MachineSetGVK"}

// TestOnlyCAPICreatesOrDeletesMachines: Cluster API core runs for real in the controller suites, the
// end-to-end test, the chaos campaign and the demo, and it alone decides which Machines exist. No code of
// this repository (the world driver, the harness, the demo, any test) may create or delete a Machine or a
// MachineSet: a variable built from a Machine/MachineSet GroupVersionKind must never be passed to a
// Create, Delete or DeleteAllOf call (or the world's createIfAbsent). The one exception is what HyperShift
// itself creates, played by the world: the MachineSet of an InPlace NodePool (hyperShiftRenders).
func TestOnlyCAPICreatesOrDeletesMachines(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string][]byte{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		sources[rel] = src
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files, offenders := len(sources), []string{}
	// Helpers that return a Machine (e.g. machineOf(ctx, ...)) make their callers' arguments Machines too.
	returning := map[string]bool{}
	for name, src := range sources {
		for fn := range machineReturners(t, name, src) {
			returning[fn] = true
		}
	}
	for name, src := range sources {
		offenders = append(offenders, machineWrites(t, name, src, returning)...)
	}
	if files < 100 {
		t.Fatalf("scanned only %d Go files: the walk is broken", files)
	}
	for _, o := range offenders {
		t.Errorf("creates or deletes a Machine/MachineSet (only CAPI may): %s", o)
	}
	t.Logf("scanned %d Go files", files)
}

// machineWrites returns "file:line" of each Create/Delete/DeleteAllOf call in src that is passed a
// variable assigned (or given a GroupVersionKind) from an expression naming a Machine kind.
func machineWrites(t *testing.T, name string, src []byte, returning map[string]bool) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	isMachine := func(e ast.Expr, vars map[string]bool) bool {
		if id, ok := e.(*ast.Ident); ok && vars[id.Name] {
			return true
		}
		if call, ok := e.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && returning[id.Name] {
				return true
			}
		}
		return namesMachineKind(e)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body = fn.Body
		case *ast.FuncLit:
			body = fn.Body
		}
		if body == nil {
			return true
		}
		if fd, ok := n.(*ast.FuncDecl); ok && hyperShiftRenders[filepath.ToSlash(name)+":"+fd.Name.Name] {
			return false
		}
		machines := map[string]bool{}
		ast.Inspect(body, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for i, rhs := range s.Rhs {
					if i < len(s.Lhs) && isMachine(rhs, machines) {
						if id, ok := s.Lhs[i].(*ast.Ident); ok {
							machines[id.Name] = true
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := s.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "SetGroupVersionKind" && len(s.Args) == 1 && namesMachineKind(s.Args[0]) {
					if id, ok := sel.X.(*ast.Ident); ok {
						machines[id.Name] = true
					}
				}
			}
			return true
		})
		ast.Inspect(body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Create" && sel.Sel.Name != "Delete" && sel.Sel.Name != "DeleteAllOf" && sel.Sel.Name != "createIfAbsent") {
				return true
			}
			for _, arg := range call.Args {
				if isMachine(arg, machines) {
					out = append(out, fset.Position(call.Pos()).String())
					break
				}
			}
			return true
		})
		return false
	})
	return out
}

// machineReturners are the functions of src that return a variable built from a Machine kind.
func machineReturners(t *testing.T, name string, src []byte) map[string]bool {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := map[string]bool{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		vars := map[string]bool{}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for i, rhs := range s.Rhs {
					if i < len(s.Lhs) && namesMachineKind(rhs) {
						if id, ok := s.Lhs[i].(*ast.Ident); ok {
							vars[id.Name] = true
						}
					}
				}
			case *ast.ReturnStmt:
				for _, r := range s.Results {
					if id, ok := r.(*ast.Ident); ok && vars[id.Name] {
						out[fn.Name.Name] = true
					}
				}
			}
			return true
		})
	}
	return out
}

// namesMachineKind reports whether the expression mentions MachineGVK or MachineSetGVK (not
// AgentMachineGVK or MachineDeploymentGVK).
func namesMachineKind(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		var name string
		switch x := n.(type) {
		case *ast.Ident:
			name = x.Name
		case *ast.SelectorExpr:
			name = x.Sel.Name
		}
		for _, k := range machineKinds {
			if name == k {
				found = true
			}
		}
		return !found
	})
	return found
}

// TestMachineWritesAreFound: the scan finds the ways this repository builds Machine objects (so the check
// above can fail), and leaves reads and other kinds alone.
func TestMachineWritesAreFound(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"world object created", `m := newObject(MachineGVK); _ = d.c.Create(ctx, m)`, 1},
		{"operator view deleted", `m := agents.New(agents.MachineGVK()); _ = k8s.Delete(ctx, m)`, 1},
		{"GVK set then created", `m := &unstructured.Unstructured{}; m.SetGroupVersionKind(world.MachineGVK); _ = k8s.Create(ctx, m)`, 1},
		{"MachineSet deleted", `ms := newObject(world.MachineSetGVK); _ = c.Delete(ctx, ms)`, 1},
		{"all of them deleted", `_ = c.DeleteAllOf(ctx, newObject(MachineGVK))`, 1},
		{"read only", `m := agents.New(agents.MachineGVK()); _ = c.Get(ctx, key, m)`, 0},
		{"AgentMachine created", `am := newObject(AgentMachineGVK); _ = c.Create(ctx, am)`, 0},
		{"MachineDeployment created", `md := newObject(MachineDeploymentGVK); _ = c.Create(ctx, md)`, 0},
		{"MachineSet created through the world's helper", `ms := newObject(MachineSetGVK); _ = d.createIfAbsent(ctx, ms)`, 1},
		{"a helper's Machine deleted", `Expect(k8s.Delete(ctx, machineOf("a"))).To(Succeed())`, 1},
		{"a helper's Machine assigned, then deleted", `m := machineOf("a"); _ = k8s.Delete(ctx, m)`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\nfunc f() {\n" + tc.body + "\n}\n" +
				"func machineOf(k string) *unstructured.Unstructured { m := agents.New(agents.MachineGVK()); _ = c.Get(ctx, k, m); return m }\n"
			if got := machineWrites(t, "x.go", []byte(src), machineReturners(t, "x.go", []byte(src))); len(got) != tc.want {
				t.Errorf("found %v, want %d", got, tc.want)
			}
		})
	}
}

// TestHyperShiftsMachineSetIsTheOnlyException: the InPlace MachineSet may be created by the function that
// plays HyperShift, and by no other function, even in the same file.
func TestHyperShiftsMachineSetIsTheOnlyException(t *testing.T) {
	const file = "test/sim/world/inplace.go"
	for fn, want := range map[string]int{"ensureMachineSet": 0, "scaleMachineSet": 1} {
		src := "package world\nfunc (d *Driver) " + fn + "() {\nms := newObject(MachineSetGVK); _ = d.createIfAbsent(ctx, ms)\n}\n"
		if got := machineWrites(t, file, []byte(src), nil); len(got) != want {
			t.Errorf("%s: found %v, want %d", fn, got, want)
		}
	}
}
