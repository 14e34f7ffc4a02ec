package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// The Dockerfiles stay the one source of truth for what each image is (base, labels, user, entrypoint, files):
// this tool interprets the subset of instructions they use, for the final stage, and the `go build` of the
// builder stage a COPY --from names. An instruction it does not know fails the build, so a Dockerfile change
// cannot silently diverge from what a release pushes.

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, ARG, LABEL, ...
	args string
	line int
}

// stage is one FROM and the instructions after it.
type stage struct {
	from, name string
	ins        []instruction
}

// parseDockerfile splits text into stages (comments and blank lines dropped, `\` continuations joined).
func parseDockerfile(text string) ([]stage, error) {
	var (
		stages []stage
		cur    strings.Builder
		start  int
	)
	flush := func() error {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		if s == "" {
			return nil
		}
		cmd, args, _ := strings.Cut(s, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			var st stage
			for i := 0; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "--"):
				case strings.EqualFold(f[i], "AS") && i+1 < len(f):
					st.name = f[i+1]
					i++
				default:
					st.from = f[i]
				}
			}
			if st.from == "" {
				return fmt.Errorf("line %d: FROM without an image", in.line)
			}
			stages = append(stages, st)
			return nil
		}
		if len(stages) == 0 {
			return fmt.Errorf("line %d: %s before the first FROM (global ARGs are not supported)", in.line, in.cmd)
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		return nil
	}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimRight(raw, " \t\r")
		if cur.Len() == 0 {
			t := strings.TrimSpace(line)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			start = i + 1
		} else if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			continue // a comment inside a continuation
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		if err := flush(); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return stages, nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expand substitutes $VAR, ${VAR} and ${VAR:-default} as Docker does for ARG values.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		g := varRef.FindStringSubmatch(m)
		name, def, hasDef := g[1], g[3], g[2] != ""
		if name == "" {
			name = g[4]
		}
		if v, ok := vars[name]; ok && (v != "" || !hasDef) {
			return v
		}
		return def
	})
}

// words splits a shell-form argument list on blanks, honouring single and double quotes (no escapes beyond
// \" inside double quotes): enough for LABEL pairs and the go build line.
func words(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		quote rune
		have  bool
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == '"' && r == '\\' && i+1 < len(rs) && rs[i+1] == '"':
			cur.WriteRune('"')
			i++
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, have = r, true
		case r == ' ' || r == '\t':
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}

// execForm parses ["a", "b"] (JSON form); shell form is refused for ENTRYPOINT and CMD, which must not
// depend on a shell in distroless images.
func execForm(in instruction) ([]string, error) {
	var argv []string
	if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
		return nil, fmt.Errorf("line %d: %s must use the JSON (exec) form: %w", in.line, in.cmd, err)
	}
	return argv, nil
}

// copyOp is one COPY: sources from the build context, or (from != "") a binary the builder stage builds.
type copyOp struct {
	from string
	srcs []string
	dst  string
	text string
	line int
}

// goBuild is what a builder stage's `RUN ... go build` does: the flags and the package, and its -o name.
type goBuild struct {
	flags  []string
	pkg    string
	output string // path of -o relative to the stage's WORKDIR
	env    map[string]string
}

// imageDef is the final stage of a Dockerfile, interpreted.
type imageDef struct {
	base            string // an image reference, or "scratch"
	labels          map[string]string
	user, workdir   string
	entrypoint, cmd []string
	entrypointSet   bool
	cmdSet          bool
	copies          []copyOp
	chmods          map[string]int64 // path in the image -> mode
	builds          map[string]goBuild
	skipped         []string // RUN steps that need an engine and were left out (say so)
}

// knownSkip says why a RUN step may be left out without an engine; other RUN steps fail the build.
func knownSkip(argv []string) (string, bool) {
	if len(argv) > 1 && strings.HasSuffix(argv[0], "/opm") && argv[1] == "serve" {
		for _, a := range argv {
			if a == "--cache-only" {
				return "opm serve --cache-only (the serve cache is built by opm when the catalog pod starts)", true
			}
		}
	}
	return "", false
}

// interpret reads the final stage of the Dockerfile at path; buildArgs override ARG defaults (--build-arg).
func interpret(path string, buildArgs map[string]string) (*imageDef, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	stages, err := parseDockerfile(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	def := &imageDef{labels: map[string]string{}, chmods: map[string]int64{}, builds: map[string]goBuild{}}
	final := stages[len(stages)-1]
	def.base = final.from
	vars := map[string]string{}
	for _, in := range final.ins {
		if err := def.apply(in, vars, buildArgs); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, c := range def.copies {
		if c.from == "" {
			continue
		}
		if _, done := def.builds[c.from]; done {
			continue
		}
		var src *stage
		for i := range stages[:len(stages)-1] {
			if stages[i].name == c.from {
				src = &stages[i]
			}
		}
		if src == nil {
			return nil, fmt.Errorf("%s: line %d: COPY --from=%s names no earlier stage", path, c.line, c.from)
		}
		b, err := builderGoBuild(*src)
		if err != nil {
			return nil, fmt.Errorf("%s: stage %s: %w", path, c.from, err)
		}
		def.builds[c.from] = b
	}
	return def, nil
}

func (def *imageDef) apply(in instruction, vars, buildArgs map[string]string) error {
	switch in.cmd {
	case "ARG":
		name, val, _ := strings.Cut(in.args, "=")
		if v, ok := buildArgs[name]; ok {
			val = v
		}
		vars[name] = strings.Trim(val, `"`)
	case "LABEL":
		ws, err := words(expand(in.args, vars))
		if err != nil {
			return fmt.Errorf("line %d: %w", in.line, err)
		}
		for _, w := range ws {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				return fmt.Errorf("line %d: LABEL %q is not key=value", in.line, w)
			}
			def.labels[k] = v
		}
	case "USER":
		def.user = expand(in.args, vars)
	case "WORKDIR":
		def.workdir = expand(in.args, vars)
	case "ENTRYPOINT":
		argv, err := execForm(in)
		if err != nil {
			return err
		}
		def.entrypoint, def.entrypointSet = argv, true
	case "CMD":
		argv, err := execForm(in)
		if err != nil {
			return err
		}
		def.cmd, def.cmdSet = argv, true
	case "COPY":
		ws, err := words(expand(in.args, vars))
		if err != nil {
			return fmt.Errorf("line %d: %w", in.line, err)
		}
		op := copyOp{text: "COPY " + in.args, line: in.line}
		var rest []string
		for _, w := range ws {
			switch {
			case strings.HasPrefix(w, "--from="):
				op.from = strings.TrimPrefix(w, "--from=")
			case strings.HasPrefix(w, "--"):
				return fmt.Errorf("line %d: COPY flag %s is not supported", in.line, w)
			default:
				rest = append(rest, w)
			}
		}
		if len(rest) < 2 {
			return fmt.Errorf("line %d: COPY needs a source and a destination", in.line)
		}
		op.srcs, op.dst = rest[:len(rest)-1], rest[len(rest)-1]
		def.copies = append(def.copies, op)
	case "RUN":
		if strings.HasPrefix(in.args, "[") {
			argv, err := execForm(in)
			if err != nil {
				return err
			}
			if why, ok := knownSkip(argv); ok {
				def.skipped = append(def.skipped, why)
				return nil
			}
			return fmt.Errorf("line %d: RUN %s needs a container engine", in.line, in.args)
		}
		ws, err := words(expand(in.args, vars))
		if err != nil {
			return fmt.Errorf("line %d: %w", in.line, err)
		}
		// chmod of files this stage copied is folded into their layer entries.
		if len(ws) >= 3 && ws[0] == "chmod" {
			var mode int64
			if _, err := fmt.Sscanf(ws[1], "%o", &mode); err != nil {
				return fmt.Errorf("line %d: chmod mode %q: %w", in.line, ws[1], err)
			}
			for _, p := range ws[2:] {
				def.chmods[p] = mode
			}
			return nil
		}
		return fmt.Errorf("line %d: RUN %s needs a container engine", in.line, in.args)
	default:
		return fmt.Errorf("line %d: instruction %s is not supported without an engine", in.line, in.cmd)
	}
	return nil
}

// builderGoBuild finds the stage's `go build` and its flags; CGO must be off (a static binary for any base).
func builderGoBuild(st stage) (goBuild, error) {
	workdir := "/"
	for _, in := range st.ins {
		switch in.cmd {
		case "WORKDIR":
			workdir = in.args
		case "RUN":
			ws, err := words(in.args)
			if err != nil {
				return goBuild{}, fmt.Errorf("line %d: %w", in.line, err)
			}
			i := 0
			env := map[string]string{}
			for ; i < len(ws) && strings.Contains(ws[i], "=") && !strings.HasPrefix(ws[i], "-"); i++ {
				k, v, _ := strings.Cut(ws[i], "=")
				env[k] = v
			}
			if i+1 >= len(ws) || ws[i] != "go" || ws[i+1] != "build" {
				continue
			}
			if env["CGO_ENABLED"] != "0" {
				return goBuild{}, fmt.Errorf("line %d: go build without CGO_ENABLED=0", in.line)
			}
			b := goBuild{env: env}
			args := ws[i+2:]
			for j := 0; j < len(args); j++ {
				switch a := args[j]; {
				case a == "-o" && j+1 < len(args):
					b.output = args[j+1]
					j++
				case strings.HasPrefix(a, "-"):
					b.flags = append(b.flags, a)
				case b.pkg == "":
					b.pkg = a
				default:
					return goBuild{}, fmt.Errorf("line %d: go build of more than one package", in.line)
				}
			}
			if b.output == "" || b.pkg == "" {
				return goBuild{}, fmt.Errorf("line %d: go build needs -o and a package", in.line)
			}
			if !strings.HasPrefix(b.output, "/") {
				b.output = strings.TrimSuffix(workdir, "/") + "/" + b.output
			}
			return b, nil
		}
	}
	return goBuild{}, fmt.Errorf("no RUN ... go build")
}
