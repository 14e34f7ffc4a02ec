package planner

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// agentsPath is the import path of the Agent reads and writes (Unapprove, DeleteAgent).
const agentsPath = "github.com/containeroo/agent-forge-operator/internal/agents"

// fleetEffects are the calls that change the fleet: the vSphere provider's create and destroy of a VM,
// a Kubernetes client's Create or Delete of an object (a VsphereAgent, an Agent's IP claim; the
// method name with a context and an object, so sync.Map's Delete(key) is not one), and internal/agents'
// Unapprove and DeleteAgent of an Agent.
var (
	fleetMethods = map[string]bool{"CreateVM": true, "DestroyVM": true}
	clientWrites = map[string]bool{"Create": true, "Delete": true, "DeleteAllOf": true}
	agentWrites  = map[string]bool{"Unapprove": true, "DeleteAgent": true}
	// entryPoints are called by controller-runtime, never as a carrier: the ISO manager's Reconcile
	// shares the name.
	entryPoints = map[string]bool{"Reconcile": true}
)

// carryingOut is every call path by which controllers/ changes the fleet today: "pkg.caller -> callee"
// in a package under controllers/, where callee is a fleet effect or a carrier (a function of
// controllers/ whose body reaches one; a method value, as in a list of steps, counts as a call by its
// holder). Each caller carries out a verdict made elsewhere, or is a verdict still made in place that
// this list names so that it cannot spread.
var carryingOut = map[string]bool{
	// The planner's Decisions (planner.Plan): creates, releases and replacements, expiries, the orphan
	// scan and the late Agents of destroyed VMs (their verdict: poolmemory.DestroyedHosts and a live read).
	"pool.Reconcile -> planAndAct":             true,
	"pool.planAndAct -> carryOut":              true,
	"pool.carryOut -> createVsphereAgents":     true,
	"pool.createVsphereAgents -> Create":       true,
	"pool.carryOut -> release":                 true,
	"pool.carryOut -> replaceOutdated":         true,
	"pool.replaceOutdated -> release":          true,
	"pool.release -> Unapprove":                true,
	"pool.release -> Delete":                   true,
	"pool.carryOut -> Delete":                  true,
	"pool.carryOut -> scanOrphans":             true,
	"pool.scanOrphans -> cleanOrphan":          true,
	"pool.cleanOrphan -> Unapprove":            true,
	"pool.cleanOrphan -> DestroyVM":            true,
	"pool.cleanOrphan -> DeleteAgent":          true,
	"pool.carryOut -> deleteLateAgents":        true,
	"pool.deleteLateAgents -> deleteLateAgent": true,
	"pool.deleteLateAgent -> Unapprove":        true,
	"pool.deleteLateAgent -> DeleteAgent":      true,
	// A deleted pool: every VsphereAgent goes, and its leases with it.
	"pool.Reconcile -> reconcileDelete":  true,
	"pool.reconcileDelete -> Delete":     true,
	"pool.reconcileDelete -> ReleaseAll": true,
	// The static-IP leases (controllers/staticip): claims and configs for the VMs the plan made.
	"pool.Reconcile -> prepareLeases":           true,
	"pool.prepareLeases -> Prepare":             true,
	"staticip.Prepare -> prepareLeases":         true,
	"staticip.prepareLeases -> createClaims":    true,
	"staticip.prepareLeases -> createConfigs":   true,
	"staticip.prepareLeases -> followSelector":  true,
	"staticip.prepareLeases -> removeLeases":    true,
	"staticip.createClaims -> Create":           true,
	"staticip.createConfigs -> createConfig":    true,
	"staticip.createConfig -> Create":           true,
	"staticip.followSelector -> Delete":         true,
	"staticip.followSelector -> createConfig":   true,
	"staticip.removeLeases -> Delete":           true,
	"staticip.ReleaseAll -> releaseAllLeases":   true,
	"staticip.releaseAllLeases -> removeLeases": true,
	"staticip.Hold -> deleteConfig":             true,
	"staticip.deleteConfig -> Delete":           true,
	// Several NICs: a lease's secondary claims (one per further IPAM pool) go with its main claim, and
	// leases made for an earlier NIC layout are given back (removeStale).
	"staticip.createClaims -> createSecondaries":          true,
	"staticip.prepareLeases -> createSecondaries":         true,
	"staticip.createSecondaries -> createSecondaryClaims": true,
	"staticip.createSecondaryClaims -> Create":            true,
	"staticip.removeLeases -> deleteSecondaries":          true,
	"staticip.deleteSecondaries -> Delete":                true,
	"staticip.prepareLeases -> removeStale":               true,
	"staticip.removeStale -> removeLeases":                true,
	"vsphereagent.ensureVM -> staticIPLease":              true,
	"vsphereagent.staticIPLease -> Hold":                  true,
	// A VsphereAgent's own VM: created once for the object the plan created, destroyed when its create
	// failed or the object is deleted (by a release above), and the registration-timeout verdict
	// (checkLiveness: still decided in place, the one liveness replacement).
	"vsphereagent.Reconcile -> ensureVM":          true,
	"vsphereagent.ensureVM -> CreateVM":           true,
	"vsphereagent.ensureVM -> createFailed":       true,
	"vsphereagent.createFailed -> DestroyVM":      true,
	"vsphereagent.Reconcile -> checkLiveness":     true,
	"vsphereagent.checkLiveness -> DestroyVM":     true,
	"vsphereagent.Reconcile -> reconcileDelete":   true,
	"vsphereagent.reconcileDelete -> Unapprove":   true,
	"vsphereagent.reconcileDelete -> DestroyVM":   true,
	"vsphereagent.reconcileDelete -> DeleteAgent": true,
}

// TestOnlyCarriersChangeTheFleet: a decision that changes the fleet (how many VMs to create or
// delete, which VM or Agent to release, an orphan or a late Agent to remove) becomes a call of a fleet
// effect, and controllers/ may make such a call only along the paths in carryingOut. TestOnlyThePlannerDecides
// sees a controller that builds a plan of its own; this test sees one that acts without a plan.
//
// How it fails: a new call of CreateVM, DestroyVM, a client's Create/Delete(ctx, obj), agents.Unapprove
// or agents.DeleteAgent anywhere in controllers/ (a controller deciding on its own to create or remove),
// or a new call of a carrier (such as r.release or r.createVsphereAgents) from a function not listed
// (a controller choosing a VM to release outside carryOut); also a listed path that no longer exists
// (the list must shrink with the code). TestCarriersCheckCatchesAPlantedDecision plants such decisions
// in the real pool reconciler's source.
//
// What it does not catch: a decision made inside a listed function (a count compared in carryOut or
// release; carryOut is meant to read s.plan only, which review must keep), a decision that changes
// what a listed call is given (another failure domain passed to createVsphereAgents from carryOut), a
// verdict that only writes status or conditions (liveness, Ready), a call through a function value kept
// under another name (a field or variable assigned elsewhere), a carrier named Reconcile (entryPoints),
// and a fleet change by another call (a Patch or Update that deletes by finalizer, a vSphere method not
// in fleetMethods). Functions are matched by name, not type: a method that shares a carrier's name
// counts as that carrier, which can only make the check stricter.
func TestOnlyCarriersChangeTheFleet(t *testing.T) {
	files, err := goSources(filepath.Join("..", "..", "controllers"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("read only %d Go files under controllers/: the walk is broken", len(files))
	}
	got, err := fleetPaths(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range unlisted(got) {
		t.Errorf("changes the fleet outside the carrying-out paths (decide in the planner or a named policy, carry out in pool.carryOut): %s at %s", p, strings.Join(got[p], ", "))
	}
	for _, p := range stale(got) {
		t.Errorf("carryingOut lists %q, which the code no longer has: remove it", p)
	}
	t.Logf("read %d Go files, %d carrying-out call paths", len(files), len(carryingOut))
}

// TestCarriersCheckCatchesAPlantedDecision shows the check can fail: each row plants a decision in a
// copy of the real pool reconciler (controllers/pool/reconciler.go, read from disk and changed as
// text) and wants exactly the named path reported.
func TestCarriersCheckCatchesAPlantedDecision(t *testing.T) {
	dir := filepath.Join("..", "..", "controllers")
	files, err := goSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	const target = "pool/reconciler.go"
	original, ok := files[target]
	if !ok {
		t.Fatalf("%s not read", target)
	}
	// The planted code goes at the start of the body of func (r *Reconciler) Reconcile, which has a ctx.
	anchor := "func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {\n"
	if !strings.Contains(string(original), anchor) {
		t.Fatalf("%s has no %q to plant at: update the self-test", target, anchor)
	}
	tests := []struct {
		name, plant string
		want        []string
	}{
		{"nothing planted", "", nil},
		{"a VM destroyed by the controller", "\tif req.Name == \"x\" { var vs vsphere.Client; _ = vs.DestroyVM(ctx, \"dc\", \"uuid\", vsphere.Ownership{}) }\n",
			[]string{"pool.Reconcile -> DestroyVM"}},
		{"a VsphereAgent created when demand exceeds supply", "\tif n := len(req.Name); n > 3 { _ = r.Create(ctx, &afv1.VsphereAgent{}) }\n",
			[]string{"pool.Reconcile -> Create"}},
		{"a VM chosen for release outside carryOut", "\tif false { _, _ = r.release(ctx, nil, \"k\", \"vm-1\", \"surplus\") }\n",
			[]string{"pool.Reconcile -> release"}},
		{"a create batch sized by the controller", "\tif false { _ = r.createVsphereAgents(ctx, nil, \"k\", []string{\"\", \"\"}) }\n",
			[]string{"pool.Reconcile -> createVsphereAgents"}},
		{"a late Agent deleted by the controller", "\tif false { _ = agents.DeleteAgent(ctx, r.Client, nil) }\n",
			[]string{"pool.Reconcile -> DeleteAgent"}},
		{"a closure is its function's", "\tgo func() { _ = r.Delete(ctx, &afv1.VsphereAgent{}) }()\n",
			[]string{"pool.Reconcile -> Delete"}},
		{"a carrier handed on as a method value", "\tsteps := []any{r.release}; _ = steps\n",
			[]string{"pool.Reconcile -> release"}},
		{"a map's Delete is no fleet change", "\tvar m sync.Map; m.Delete(req.NamespacedName)\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			planted := map[string][]byte{}
			for k, v := range files {
				planted[k] = v
			}
			planted[target] = []byte(strings.Replace(string(original), anchor, anchor+tt.plant, 1))
			got, err := fleetPaths(planted)
			if err != nil {
				t.Fatal(err)
			}
			if bad := unlisted(got); fmt.Sprint(bad) != fmt.Sprint(tt.want) {
				t.Fatalf("unlisted paths %v, want %v", bad, tt.want)
			}
		})
	}
}

// goSources reads every non-test Go file below dir, keyed by its slash path relative to dir (also the
// walk of TestOnlyThePlannerDecides).
func goSources(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = src
		return nil
	})
	return out, err
}

// call is one call made in a function of controllers/: "pkg.Func" calls name, effect when name is a
// fleet effect itself.
type call struct {
	caller, name, where string
	effect              bool
}

// fleetPaths returns "pkg.caller -> callee" for every call in files (keyed by path relative to
// controllers/, the package named by its first directory, "controllers" for the top one) of a fleet
// effect or of a carrier: a function of controllers/ whose body reaches a fleet effect.
func fleetPaths(files map[string][]byte) (map[string][]string, error) {
	var calls []call
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		cs, err := callsIn(name, files[name])
		if err != nil {
			return nil, err
		}
		calls = append(calls, cs...)
	}
	// Carriers, by bare function name: grown until no function reaches a new one.
	carriers := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, c := range calls {
			fn := c.caller[strings.Index(c.caller, ".")+1:]
			if (c.effect || carriers[c.name]) && !carriers[fn] && !entryPoints[fn] {
				carriers[fn], changed = true, true
			}
		}
	}
	out := map[string][]string{}
	for _, c := range calls {
		if c.effect || carriers[c.name] {
			p := c.caller + " -> " + c.name
			out[p] = append(out[p], c.where)
		}
	}
	return out, nil
}

// callsIn lists the calls each top-level function of one file makes (closures count as their
// function's); a call's name is its selector or identifier.
func callsIn(name string, src []byte) ([]call, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pkg := "controllers"
	if i := strings.Index(name, "/"); i > 0 {
		pkg = name[:i]
	}
	agentsNames := map[string]bool{}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == agentsPath {
			n := "agents"
			if imp.Name != nil {
				n = imp.Name.Name
			}
			agentsNames[n] = true
		}
	}
	var out []call
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		caller := pkg + "." + fd.Name.Name
		called := map[ast.Expr]bool{}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if ce, ok := n.(*ast.CallExpr); ok {
				called[ce.Fun] = true
			}
			return true
		})
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				// A method value (r.checkLiveness in a list of steps) is called later: the path is its holder's.
				if !called[x] {
					out = append(out, call{caller: caller, name: x.Sel.Name, where: fset.Position(x.Pos()).String(), effect: fleetMethods[x.Sel.Name]})
				}
			case *ast.CallExpr:
				c := call{caller: caller, where: fset.Position(x.Pos()).String()}
				switch fn := x.Fun.(type) {
				case *ast.Ident:
					c.name = fn.Name
				case *ast.SelectorExpr:
					c.name = fn.Sel.Name
					id, isIdent := fn.X.(*ast.Ident)
					switch {
					case isIdent && agentsNames[id.Name]:
						c.effect = agentWrites[c.name]
					case fleetMethods[c.name]:
						c.effect = true
					case clientWrites[c.name] && len(x.Args) >= 2:
						c.effect = true
					}
				default:
					return true
				}
				out = append(out, c)
			}
			return true
		})
	}
	return out, nil
}

// unlisted returns the paths of got that carryingOut does not list.
func unlisted(got map[string][]string) []string {
	var out []string
	for p := range got {
		if !carryingOut[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// stale returns the paths carryingOut lists that got does not have.
func stale(got map[string][]string) []string {
	var out []string
	for p := range carryingOut {
		if _, ok := got[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
