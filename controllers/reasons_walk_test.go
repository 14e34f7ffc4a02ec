package controllers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The reason walker reads the product's Go code with go/ast and finds every place a reason the operator
// shows is given a value: an argument for a parameter named reason (Recorder.Eventf, Recorder.Batch,
// SetCondition, the ISO cache's event builders, ...), a composite literal's Reason field (metav1.Condition,
// PlannedAction, the planner's Action and Release, ...), an assignment or var to a name ending in
// "reason", and a return of a function named ...Reason or of a result named ...reason. Each value must be
// a constant of api/v1alpha1 named Reason<Value>, or a value passed through (a variable, a parameter, a
// field, a call), whose own origin is one of the places above. A raw string, a concatenation or a constant
// declared in any other package is reported, and so is any constant named Reason... declared outside the
// API package (a local copy).

const (
	modulePath = "github.com/containeroo/agent-forge-operator"
	apiPath    = modulePath + "/api/v1alpha1"
)

// walkedFile is one parsed Go file of the module and the import path of its package.
type walkedFile struct {
	name string // for messages (a path relative to the repository)
	pkg  string // import path of its package
	file *ast.File
}

// reasonEnv is what the walker knows of the whole tree: the constants of every package, and which
// parameters of which functions take a reason.
type reasonEnv struct {
	consts       map[string]map[string]bool // package import path -> names of its package-level constants
	apiReasons   map[string]string          // Reason constants of api/v1alpha1 -> their values
	undocumented []string                   // Reason constants of api/v1alpha1 without a doc comment
	reasonParams map[string]map[int]bool    // function or method name -> indices of its reason parameters
}

// parseWalked parses src as the file name of package pkg.
func parseWalked(fset *token.FileSet, name, pkg string, src []byte) (walkedFile, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution|parser.ParseComments)
	return walkedFile{name: name, pkg: pkg, file: f}, err
}

// isReasonName reports whether an identifier names a reason ("reason", "Reason", "refsReason").
func isReasonName(name string) bool { return strings.HasSuffix(strings.ToLower(name), "reason") }

// newReasonEnv collects the constants and the reason parameters of files.
func newReasonEnv(files []walkedFile) *reasonEnv {
	env := &reasonEnv{consts: map[string]map[string]bool{}, apiReasons: map[string]string{}, reasonParams: map[string]map[int]bool{}}
	// Recorders the walk does not parse: client-go's record.EventRecorder takes its reason third
	// (Event(object, eventtype, reason, message)) or fourth (AnnotatedEventf(object, annotations,
	// eventtype, reason, ...)); its Eventf is left out, its reason's place being events.k8s.io's eventtype's.
	env.reasonParams["Event"] = map[int]bool{2: true}
	env.reasonParams["AnnotatedEventf"] = map[int]bool{3: true}
	addParams := func(name string, ft *ast.FuncType) {
		i := 0
		for _, field := range ft.Params.List {
			n := len(field.Names)
			if n == 0 {
				n = 1
			}
			for j := 0; j < n; j++ {
				if len(field.Names) > 0 && isReasonName(field.Names[j].Name) {
					if env.reasonParams[name] == nil {
						env.reasonParams[name] = map[int]bool{}
					}
					env.reasonParams[name][i] = true
				}
				i++
			}
		}
	}
	for _, wf := range files {
		if env.consts[wf.pkg] == nil {
			env.consts[wf.pkg] = map[string]bool{}
		}
		for _, decl := range wf.file.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						env.consts[wf.pkg][n.Name] = true
						if wf.pkg == apiPath && strings.HasPrefix(n.Name, "Reason") && i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								env.apiReasons[n.Name], _ = strconv.Unquote(lit.Value)
							}
							if vs.Doc == nil && vs.Comment == nil {
								env.undocumented = append(env.undocumented, n.Name)
							}
						}
					}
				}
			case *ast.FuncDecl:
				addParams(d.Name.Name, d.Type)
			}
		}
		// Methods of interfaces (iso.EventRecorder's Eventf) and function literals held in a variable
		// (done := func(reason, msg string)) take reasons too.
		ast.Inspect(wf.file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.InterfaceType:
				for _, m := range x.Methods.List {
					if ft, ok := m.Type.(*ast.FuncType); ok {
						for _, name := range m.Names {
							addParams(name.Name, ft)
						}
					}
				}
			case *ast.AssignStmt:
				for i, r := range x.Rhs {
					if lit, ok := r.(*ast.FuncLit); ok && i < len(x.Lhs) && lastName(x.Lhs[i]) != "" {
						addParams(lastName(x.Lhs[i]), lit.Type)
					}
				}
			case *ast.ValueSpec:
				for i, v := range x.Values {
					if lit, ok := v.(*ast.FuncLit); ok && i < len(x.Names) {
						addParams(x.Names[i].Name, lit.Type)
					}
				}
			}
			return true
		})
	}
	return env
}

// apiReasonProblems returns the API's Reason constants not named Reason<Value> or without a doc comment.
func (env *reasonEnv) apiReasonProblems() []string {
	var out []string
	for _, name := range env.undocumented {
		out = append(out, "api/v1alpha1."+name+" has no doc comment saying what it means")
	}
	for name, value := range env.apiReasons {
		if name != "Reason"+value {
			out = append(out, fmt.Sprintf("api/v1alpha1.%s = %q: a reason constant is named Reason<Value>", name, value))
		}
	}
	sort.Strings(out)
	return out
}

// reasonProblems returns "file:line: problem" for every reason of wf that is not an API constant.
func (env *reasonEnv) reasonProblems(fset *token.FileSet, wf walkedFile) []string {
	imports := map[string]string{} // name in this file -> import path
	for _, imp := range wf.file.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = p
	}
	// Constants of this file's package, and those declared inside its functions.
	local := map[string]bool{}
	for n := range env.consts[wf.pkg] {
		local[n] = true
	}
	var out []string
	report := func(at ast.Node, format string, args ...any) {
		out = append(out, fset.Position(at.Pos()).String()+": "+fmt.Sprintf(format, args...))
	}
	ast.Inspect(wf.file, func(n ast.Node) bool {
		if gd, ok := n.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, spec := range gd.Specs {
				for _, name := range spec.(*ast.ValueSpec).Names {
					local[name.Name] = true
					if wf.pkg != apiPath && strings.HasPrefix(name.Name, "Reason") {
						report(name, "constant %s declared outside api/v1alpha1: reasons are the API's constants", name.Name)
					}
				}
			}
		}
		return true
	})

	// check reports v unless it is an API reason constant or a value passed through.
	var check func(v ast.Expr, where string)
	check = func(v ast.Expr, where string) {
		switch x := v.(type) {
		case *ast.ParenExpr:
			check(x.X, where)
		case *ast.BasicLit:
			if x.Kind == token.STRING && x.Value != `""` { // "" is no reason (e.g. vsphere.Reason(nil))
				report(x, "raw string %s as %s", x.Value, where)
			}
		case *ast.BinaryExpr:
			report(x, "a reason built by an expression as %s", where)
		case *ast.Ident:
			if wf.pkg == apiPath && env.apiReasons[x.Name] != "" {
				return
			}
			if local[x.Name] {
				report(x, "constant %s of this package as %s (use api/v1alpha1's)", x.Name, where)
			}
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			if !ok {
				return // a field: passed through
			}
			p, ok := imports[id.Name]
			if !ok {
				return
			}
			switch {
			case p == apiPath && env.apiReasons[x.Sel.Name] != "":
			case p == apiPath && env.consts[apiPath][x.Sel.Name]:
				report(x, "API constant %s is not a Reason constant, as %s", x.Sel.Name, where)
			case env.consts[p][x.Sel.Name]:
				report(x, "constant %s.%s declared outside api/v1alpha1 as %s", id.Name, x.Sel.Name, where)
			}
		case *ast.CallExpr:
			// A conversion (string(x), afv1.VMPhase(x)) passes its operand's origin through.
			if len(x.Args) == 1 {
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "string" {
					check(x.Args[0], where)
				}
			}
		}
	}

	// Returns of functions that produce reasons.
	var funcs []struct {
		name string
		typ  *ast.FuncType
		body *ast.BlockStmt
	}
	ast.Inspect(wf.file, func(n ast.Node) bool {
		switch f := n.(type) {
		case *ast.FuncDecl:
			if f.Body != nil {
				funcs = append(funcs, struct {
					name string
					typ  *ast.FuncType
					body *ast.BlockStmt
				}{f.Name.Name, f.Type, f.Body})
			}
		case *ast.FuncLit:
			funcs = append(funcs, struct {
				name string
				typ  *ast.FuncType
				body *ast.BlockStmt
			}{"", f.Type, f.Body})
		}
		return true
	})
	for _, f := range funcs {
		var results []bool // which results are reasons
		if f.typ.Results != nil {
			for _, field := range f.typ.Results.List {
				if len(field.Names) == 0 {
					results = append(results, false)
				}
				for _, n := range field.Names {
					results = append(results, isReasonName(n.Name))
				}
			}
		}
		if len(results) == 1 && isReasonName(f.name) {
			results[0] = true
		}
		ast.Inspect(f.body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // its own entry in funcs
			}
			if ret, ok := n.(*ast.ReturnStmt); ok && len(ret.Results) == len(results) {
				for i, r := range ret.Results {
					if results[i] {
						check(r, "a returned reason")
					}
				}
			}
			return true
		})
	}

	ast.Inspect(wf.file, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			name := ""
			switch fn := x.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			for i := range env.reasonParams[name] {
				if i < len(x.Args) {
					check(x.Args[i], "the reason argument of "+name)
				}
			}
		case *ast.KeyValueExpr:
			if k, ok := x.Key.(*ast.Ident); ok && isReasonName(k.Name) {
				check(x.Value, "field "+k.Name)
			}
		case *ast.AssignStmt:
			if len(x.Lhs) != len(x.Rhs) {
				return true
			}
			for i, l := range x.Lhs {
				if name := lastName(l); name != "" && isReasonName(name) {
					check(x.Rhs[i], "the value of "+name)
				}
			}
		case *ast.ValueSpec:
			for i, name := range x.Names {
				if i < len(x.Values) && isReasonName(name.Name) {
					check(x.Values[i], "the value of "+name.Name)
				}
			}
		}
		return true
	})
	sort.Strings(out)
	return out
}

// lastName is the name an assignment writes: x for x, f for a.b.f ("" otherwise).
func lastName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
