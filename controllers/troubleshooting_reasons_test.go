package controllers

import (
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// troubleshootingDoc holds the table of every reason a user can see (moved out of README.md, which
// now only points to it).
var troubleshootingDoc = filepath.Join("..", "docs", "troubleshooting.md")

// walkProduct parses every non-test, non-generated Go file under api/, cmd/, controllers/ and internal/.
func walkProduct(t *testing.T, fset *token.FileSet) []walkedFile {
	t.Helper()
	var files []walkedFile
	for _, top := range []string{"api", "cmd", "controllers", "internal"} {
		root := filepath.Join("..", top)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
				strings.HasPrefix(d.Name(), "zz_") {
				return err
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel("..", p)
			wf, err := parseWalked(fset, filepath.ToSlash(rel), modulePath+"/"+filepath.ToSlash(filepath.Dir(rel)), src)
			if err != nil {
				return err
			}
			files = append(files, wf)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestReasonsAreAPIConstants: every condition reason, planned-action reason and Event reason the operator
// gives a value to under api/, cmd/, controllers/ and internal/ is a constant of api/v1alpha1 named after its
// value and with a doc comment (see reasons_walk_test.go for what the walker reads as a reason).
func TestReasonsAreAPIConstants(t *testing.T) {
	fset := token.NewFileSet()
	files := walkProduct(t, fset)
	env := newReasonEnv(files)
	// A walk that saw little would pass vacuously.
	if len(files) < 150 || len(env.apiReasons) < 150 {
		t.Fatalf("read %d files and %d API reasons: the walk missed the tree", len(files), len(env.apiReasons))
	}
	for _, fn := range []string{"Eventf", "Batch", "SetCondition"} {
		if len(env.reasonParams[fn]) == 0 {
			t.Fatalf("no reason parameter of %s found: the recorder or the condition helper moved", fn)
		}
	}
	for _, p := range env.apiReasonProblems() {
		t.Error(p)
	}
	problems := 0
	for _, wf := range files {
		for _, p := range env.reasonProblems(fset, wf) {
			t.Error(p)
			problems++
		}
	}
	t.Logf("%d files, %d API reasons, %d functions taking reasons: %d problems", len(files), len(env.apiReasons), len(env.reasonParams), problems)
}

// TestReasonWalkerCatchesViolations runs the walker on planted sources: each offence is reported, and
// what the product does right passes, so TestReasonsAreAPIConstants can fail.
func TestReasonWalkerCatchesViolations(t *testing.T) {
	const api = `package v1alpha1
const (
	ReasonReady = "Ready"
	ConditionReady = "Ready"
)`
	const helpers = `package plant
const ReasonLocal = "Local"
type Recorder struct{}
func (r *Recorder) Eventf(regarding, related any, eventtype, reason, action, note string, args ...any) {}
func (r *Recorder) Batch(pool any, reason, action, summary, line string) {}
func SetCondition(conds *[]any, condType string, ok bool, reason, message string, generation int64) {}`
	const head = `package x
import (
	afv1 "` + apiPath + `"
	"` + modulePath + `/internal/plant"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)
var rec *plant.Recorder
var _ = metav1.Condition{}
`
	tests := []struct {
		name, src string
		want      int
	}{
		{"an API constant as Event reason", `func f() { rec.Eventf(nil, nil, "Warning", afv1.ReasonReady, "A", "n") }`, 0},
		{"a string literal as Event reason", `func f() { rec.Eventf(nil, nil, "Warning", "Foo", "A", "n") }`, 1},
		{"a string literal as batch reason", `func f() { rec.Batch(nil, "Foo", "A", "s", "l") }`, 1},
		{"a string literal as client-go recorder's reason", `func f(r interface{ Event(any, string, string, string) }) { r.Event(nil, "Warning", "Foo", "m") }`, 1},
		{"a string literal as client-go AnnotatedEventf's reason", `func f(r interface{ AnnotatedEventf(any, map[string]string, string, string, string, ...any) }) { r.AnnotatedEventf(nil, nil, "Warning", "Foo", "m") }`, 1},
		{"an API constant as client-go recorder's reason", `func f(r interface{ Event(any, string, string, string) }) { r.Event(nil, "Normal", afv1.ReasonReady, "m") }`, 0},
		{"another package's constant as condition reason", `func f() { plant.SetCondition(nil, "T", true, plant.ReasonLocal, "m", 1) }`, 1},
		{"a local constant in a Condition literal", `const reasonMine = "Mine"
func f() any { return metav1.Condition{Type: "T", Reason: reasonMine} }`, 1},
		{"a local constant named Reason", `const ReasonMine = "Mine"`, 1},
		{"a string literal in a Condition literal", `func f() any { return metav1.Condition{Reason: "Foo"} }`, 1},
		{"an API constant that is no reason", `func f() any { return metav1.Condition{Reason: afv1.ConditionReady} }`, 1},
		{"a literal assigned to a reason variable", `func f() { reason := "Foo"; rec.Eventf(nil, nil, "Normal", reason, "A", "n") }`, 1},
		{"a literal returned as a reason", `func pickReason(ok bool) string { if ok { return afv1.ReasonReady }; return "Foo" }`, 1},
		{"a literal returned as a named reason", `func pick() (reason, msg string) { return "Foo", "m" }`, 1},
		{"a concatenated reason", `func f(s string) { rec.Eventf(nil, nil, "Normal", "Foo"+s, "A", "n") }`, 1},
		{"a converted literal", `func f() any { return metav1.Condition{Reason: string("Foo")} }`, 1},
		{"a literal for a function variable's reason", `func f() { done := func(reason, msg string) {}; done("Foo", "m") }`, 1},
		{"a variable passed through", `func f(reason string) { rec.Eventf(nil, nil, "Normal", reason, "A", "n") }`, 0},
		{"a field passed through", `func f(c metav1.Condition) { plant.SetCondition(nil, "T", true, c.Reason, "m", 1) }`, 0},
		{"no reason", `func vsphereReason(err error) string { if err == nil { return "" }; return afv1.ReasonReady }`, 0},
	}
	t.Run("API constants named otherwise or undocumented", func(t *testing.T) {
		fset := token.NewFileSet()
		wf, err := parseWalked(fset, "api/v1alpha1/r.go", apiPath, []byte(`package v1alpha1
const (
	// ReasonGood: documented and named after its value.
	ReasonGood = "Good"
	// ReasonWaitingForCredentials: documented, but named otherwise.
	ReasonWaitingForCredentials = "WaitingForVSphere"
	ReasonBare = "Bare"
)`))
		if err != nil {
			t.Fatal(err)
		}
		got := newReasonEnv([]walkedFile{wf}).apiReasonProblems()
		if len(got) != 2 || !strings.Contains(got[0], "ReasonBare has no doc comment") || !strings.Contains(got[1], "ReasonWaitingForCredentials") {
			t.Fatalf("found %q, want the undocumented ReasonBare and the misnamed ReasonWaitingForCredentials", got)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			var files []walkedFile
			for _, f := range []struct{ name, pkg, src string }{
				{"api/v1alpha1/reasons.go", apiPath, api},
				{"internal/plant/helpers.go", modulePath + "/internal/plant", helpers},
				{"controllers/x/x.go", modulePath + "/controllers/x", head + tt.src},
			} {
				wf, err := parseWalked(fset, f.name, f.pkg, []byte(f.src))
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, wf)
			}
			env := newReasonEnv(files)
			got := env.reasonProblems(fset, files[2])
			if len(got) != tt.want {
				t.Fatalf("found %d problem(s) %q, want %d", len(got), got, tt.want)
			}
			// The planted helpers declare ReasonLocal outside the API: that is a problem of theirs.
			if h := env.reasonProblems(fset, files[1]); len(h) != 1 {
				t.Fatalf("helpers: %q, want the one local Reason constant", h)
			}
		})
	}
}

// TestTroubleshootingListsEveryReason: every reason constant of api/v1alpha1 (every condition reason,
// planned-action reason and Event reason the operator can show: TestReasonsAreAPIConstants) appears in
// docs/troubleshooting.md's "Troubleshooting by condition reason" table.
func TestTroubleshootingListsEveryReason(t *testing.T) {
	doc, err := os.ReadFile(troubleshootingDoc)
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## Troubleshooting by condition reason\n")
	if start < 0 {
		t.Fatalf("%s has no section \"## Troubleshooting by condition reason\"", troubleshootingDoc)
	}
	section = section[start+1:] // from the heading line
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	if strings.Count(section, "\n| ") < 100 {
		t.Fatalf("the troubleshooting section of %s has %d table rows: the section cut is broken", troubleshootingDoc, strings.Count(section, "\n| "))
	}
	fset := token.NewFileSet()
	env := newReasonEnv(walkProduct(t, fset))
	if len(env.apiReasons) < 150 {
		t.Fatalf("found only %d reasons: the scan is broken", len(env.apiReasons))
	}
	for name, value := range env.apiReasons {
		if !strings.Contains(section, "`"+value+"`") {
			t.Errorf("reason %s (api/v1alpha1.%s) is not in the troubleshooting table of %s", value, name, troubleshootingDoc)
		}
	}
}
