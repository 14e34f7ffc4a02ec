package planner

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// fleetQuantity matches the names a pool's demand, supply and limits go by: waiting AgentMachines,
// standby, free or available Agents, pending creates, owned VMs, slot holders, limits, caps and surpluses. An
// identifier (or selected field) whose name contains one of them is a fleet quantity.
var fleetQuantity = regexp.MustCompile(`(?i)waiting|demand|wanted|standby|available|free|supply|pending|holders|owned|maxvms|maxconcurrent|limit|capacity|spare|surplus|shortfall|deficit|excess`)

// TestOnlyThePlannerWeighsDemand: whether there is too little or too much of the fleet is decided by the
// planner and the pure policies beside it (MaxVMsSlot, the breaker, outdated images, failure domains),
// never in a controller. TestOnlyThePlannerDecides catches a decision value built outside the planner and
// TestOnlyCarriersChangeTheFleet a fleet change made off the listed call paths; this one catches the
// comparison a decision is made of, wherever it hides, even inside a listed carrier: no non-test Go file
// under controllers/ may order or subtract two fleet quantities (an ordered comparison <, <=, >, >= or a
// subtraction whose operands each name one, e.g. `snap.Waiting > len(freeAgents)` or
// `maxVMs - len(owned)`). A comparison with a constant (`status.waitingAgentMachines > 0`: is anyone
// waiting at all) is an observation, not a weighing, and passes.
//
// How it can be fooled: a quantity under a name the pattern does not know (`n < m`), or weighed in a
// helper that takes the two as plain ints; the names above are the ones this project's code and the
// API's fields use, and a review of a new controller's names is the rest of the guard.
func TestOnlyThePlannerWeighsDemand(t *testing.T) {
	srcs, err := goSources(filepath.Join("..", "..", "controllers"))
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) < 50 {
		t.Fatalf("scanned only %d Go files under controllers/: the walk is broken", len(srcs))
	}
	var offenders []string
	for rel, src := range srcs {
		found, err := fleetWeighings("controllers/"+rel, src)
		if err != nil {
			t.Fatal(err)
		}
		offenders = append(offenders, found...)
	}
	sort.Strings(offenders)
	for _, o := range offenders {
		t.Errorf("weighs fleet quantities in a controller (the planner or a pure policy beside it decides): %s", o)
	}
	t.Logf("scanned %d Go files under controllers/", len(srcs))
}

// TestFleetWeighingsCatchesViolations shows the check can fail, on planted sources and on the real
// reconciler's maxVMs admission as it was before MaxVMsSlot moved into the planner.
func TestFleetWeighingsCatchesViolations(t *testing.T) {
	tests := []struct {
		name, body string
		want       int
	}{
		{"demand against free Agents", `if snap.Waiting > len(freeAgents) { create() }`, 1},
		{"a cap minus what is owned", `room := *pool.Spec.Limits.MaxVMs - int32(len(owned)); _ = room`, 1},
		{"the old maxVMs admission in the VsphereAgent controller", `ok := holders+rank < limit && rank < len(waiting); _ = ok`, 1},
		{"standby against available, in reverse order", `for len(available) <= pool.Spec.Standby { break }`, 1},
		{"status counters compared", `if p.Status.WaitingAgentMachines >= p.Status.AvailableVMs { return }`, 1},
		{"anyone waiting at all: an observation", `if pool.Status.WaitingAgentMachines > 0 { hold = long }`, 0},
		{"a loop over the waiting list", `for i := 0; i < len(waiting); i++ {}`, 0},
		{"time arithmetic", `left := deadline.Sub(now) - pendingSince; _ = left`, 0},
		{"a sum is not a weighing", `total := len(waiting) + len(free); _ = total`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\nfunc f() {\n" + tt.body + "\n}\n"
			got, err := fleetWeighings("planted.go", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("found %d weighing(s) %v, want %d", len(got), got, tt.want)
			}
		})
	}
}

// fleetWeighings returns "file:line: expression" for each ordered comparison or subtraction in src whose
// two operands each name a fleet quantity. A weighing nested in another is reported once, outermost.
func fleetWeighings(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok {
			return true
		}
		switch b.Op {
		case token.LSS, token.LEQ, token.GTR, token.GEQ, token.SUB:
		default:
			return true
		}
		if !namesFleetQuantity(b.X) || !namesFleetQuantity(b.Y) || loopBound(b) {
			return true
		}
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(b.Pos()), exprText(src, fset, b)))
		return false
	})
	return found, nil
}

// namesFleetQuantity: e mentions an identifier or field whose name is a fleet quantity's.
func namesFleetQuantity(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && fleetQuantity.MatchString(id.Name) {
			found = true
		}
		return !found
	})
	return found
}

// loopBound: `i < len(xs)` with a plain index on the left walks a list, it weighs nothing.
func loopBound(b *ast.BinaryExpr) bool {
	id, ok := b.X.(*ast.Ident)
	if !ok || fleetQuantity.MatchString(id.Name) || b.Op != token.LSS {
		return false
	}
	call, ok := b.Y.(*ast.CallExpr)
	if !ok {
		return false
	}
	fn, ok := call.Fun.(*ast.Ident)
	return ok && fn.Name == "len"
}

// exprText is the source text of e, on one line.
func exprText(src []byte, fset *token.FileSet, e ast.Expr) string {
	start, end := fset.Position(e.Pos()).Offset, fset.Position(e.End()).Offset
	return strings.Join(strings.Fields(string(src[start:end])), " ")
}
