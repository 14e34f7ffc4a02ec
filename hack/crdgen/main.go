// Command crdgen generates the external CRDs of test/crds from the real API types: it runs controller-gen
// over the pinned HyperShift and Cluster API packages, keeps the kinds the tests install, applies what the
// upstream projects add on top of controller-gen, adapts multi-version CRDs to envtest (no conversion
// webhook) and writes each file with a header naming its source. Run it through hack/crdgen.sh, from this
// folder (its own module, GOWORK=off), so that the project's go.mod never gains these dependencies.
//
//	go run . -controller-gen ../../bin/controller-gen -out ../../test/crds
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// regenerate is the command each header names.
const regenerate = "make test-crds   (runs hack/crdgen.sh; make verify-test-crds checks for drift)"

// crdOptions are controller-gen's crd generator options. Descriptions are dropped (they only document; the
// validation stays the upstream one) so that envtest installs a few hundred KiB instead of several MiB.
const crdOptions = "crd:maxDescLen=0"

// genSet is one controller-gen run over the packages of one module.
type genSet struct {
	name   string
	module string
	pkgs   []string
}

var sets = []genSet{
	{name: "hypershift", module: "github.com/openshift/hypershift/api",
		pkgs: []string{"github.com/openshift/hypershift/api/hypershift/v1beta1"}},
	{name: "capi-core", module: "sigs.k8s.io/cluster-api/api",
		pkgs: []string{"sigs.k8s.io/cluster-api/api/core/v1beta1", "sigs.k8s.io/cluster-api/api/core/v1beta2"}},
	// Cluster API generates its IPAM CRDs from all three packages: the hub serves v1alpha1 too.
	{name: "capi-ipam", module: "sigs.k8s.io/cluster-api/api",
		pkgs: []string{"sigs.k8s.io/cluster-api/api/ipam/v1alpha1", "sigs.k8s.io/cluster-api/api/ipam/v1beta1", "sigs.k8s.io/cluster-api/api/ipam/v1beta2"}},
}

// output is one CRD written to the output folder, under controller-gen's file name.
type output struct {
	set  string
	file string
	// overrides is a folder of partial CRDs (relative to the module) that the upstream project merges over
	// controller-gen's output when it builds its release manifests.
	overrides string
	// labels are added to the CRD's metadata, as the project that installs the CRD does (e.g. HyperShift's
	// Cluster API contract label on HostedControlPlane, which CAPI reads to find the contract version).
	labels map[string]string
	// notes are extra header lines.
	notes []string
}

var outputs = []output{
	{set: "hypershift", file: "hypershift.openshift.io_hostedclusters.yaml"},
	{set: "hypershift", file: "hypershift.openshift.io_nodepools.yaml",
		overrides: "hypershift/v1beta1/manual-override-crd-manifests/nodepools.hypershift.openshift.io"},
	// HyperShift points Cluster.spec.controlPlaneRef at the HostedControlPlane and installs its CRD with the
	// v1beta1 contract label (cmd/install/assets/crds/assets.go): CAPI then reads status.initialized,
	// status.ready and status.externalManagedControlPlane under the v1beta1 contract.
	{set: "hypershift", file: "hypershift.openshift.io_hostedcontrolplanes.yaml",
		labels: map[string]string{"cluster.x-k8s.io/v1beta1": "v1beta1"},
		notes:  []string{"Label cluster.x-k8s.io/v1beta1: v1beta1 added as HyperShift's installer adds it (CAPI contract version)."}},
	{set: "capi-core", file: "cluster.x-k8s.io_machines.yaml"},
	{set: "capi-core", file: "cluster.x-k8s.io_machinesets.yaml"},
	{set: "capi-core", file: "cluster.x-k8s.io_machinedeployments.yaml"},
	{set: "capi-core", file: "cluster.x-k8s.io_clusters.yaml"},
	// The Machine controller lists MachineDrainRules when it drains a Node.
	{set: "capi-core", file: "cluster.x-k8s.io_machinedrainrules.yaml"},
	{set: "capi-ipam", file: "ipam.cluster.x-k8s.io_ipaddressclaims.yaml"},
	{set: "capi-ipam", file: "ipam.cluster.x-k8s.io_ipaddresses.yaml"},
}

// hypershiftNotes go in the header of every HyperShift CRD.
var hypershiftNotes = []string{
	"OpenShift feature gates: HyperShift builds one CRD per feature set with OpenShift's generator; plain",
	"controller-gen ignores +openshift:enable:FeatureGate, so this copy has every field (all gates on), and",
	"+openshift:validation:FeatureGateAwareEnum is applied as the union of its gated enum lists (see crdgen).",
	"Only v1beta1 exists: HyperShift serves no other version of these kinds.",
}

// gateAwareEnums says where each field carrying +openshift:validation:FeatureGateAwareEnum markers
// ("<Go struct>.<json field>") lands in the output CRDs. The enum values come from the markers; a marker
// on a field missing here stops the generation, so that a new one is not silently left unvalidated.
var gateAwareEnums = map[string][]schemaPath{
	"PlatformSpec.type":     {{file: "hypershift.openshift.io_hostedclusters.yaml", path: "spec.platform.type"}},
	"NodePoolPlatform.type": {{file: "hypershift.openshift.io_nodepools.yaml", path: "spec.platform.type"}},
}

type schemaPath struct{ file, path string }

type module struct {
	Path, Version, Dir string
}

func main() {
	controllerGen := flag.String("controller-gen", "controller-gen", "controller-gen binary")
	out := flag.String("out", "", "output folder (test/crds)")
	flag.Parse()
	if *out == "" {
		fail(errors.New("-out is required"))
	}
	if err := run(*controllerGen, *out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "crdgen:", err)
	os.Exit(1)
}

func run(controllerGen, out string) error {
	cgVersion, err := controllerGenVersion(controllerGen)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "crdgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	mods := map[string]module{}
	enums := map[string][]string{} // "<file>\x00<path>" -> values
	for _, s := range sets {
		m, ok := mods[s.module]
		if !ok {
			if m, err = moduleInfo(s.module); err != nil {
				return err
			}
			mods[s.module] = m
		}
		args := []string{crdOptions}
		for _, p := range s.pkgs {
			args = append(args, "paths="+p)
		}
		args = append(args, "output:crd:dir="+filepath.Join(tmp, s.name))
		cmd := exec.Command(controllerGen, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("controller-gen %s: %w", strings.Join(args, " "), err)
		}
		for _, p := range s.pkgs {
			found, err := scanGateAwareEnums(filepath.Join(m.Dir, strings.TrimPrefix(p, s.module)))
			if err != nil {
				return err
			}
			for field, values := range found {
				targets, ok := gateAwareEnums[field]
				if !ok {
					return fmt.Errorf("%s: field %s has +openshift:validation:FeatureGateAwareEnum markers: add it to gateAwareEnums", p, field)
				}
				for _, t := range targets {
					enums[t.file+"\x00"+t.path] = values
				}
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, o := range outputs {
		var s genSet
		for _, cand := range sets {
			if cand.name == o.set {
				s = cand
			}
		}
		m := mods[s.module]
		crd, err := readYAML(filepath.Join(tmp, s.name, o.file))
		if err != nil {
			return fmt.Errorf("%s was not generated: %w", o.file, err)
		}
		notes := append([]string(nil), o.notes...)
		if strings.HasPrefix(s.module, "github.com/openshift/hypershift/") {
			notes = append(notes, hypershiftNotes...)
		}
		if o.overrides != "" {
			n, err := applyOverrides(crd, filepath.Join(m.Dir, o.overrides))
			if err != nil {
				return fmt.Errorf("%s: %w", o.file, err)
			}
			notes = append(notes, fmt.Sprintf("Merged over controller-gen's output, as HyperShift does: %s (%s).", o.overrides, n))
		}
		if len(o.labels) > 0 {
			meta := crd["metadata"].(map[string]any)
			labels, _ := meta["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
			}
			for k, v := range o.labels {
				labels[k] = v
			}
			meta["labels"] = labels
		}
		for key, values := range enums {
			file, path, _ := strings.Cut(key, "\x00")
			if file != o.file {
				continue
			}
			if err := setEnum(crd, path, values); err != nil {
				return fmt.Errorf("%s: %w", o.file, err)
			}
		}
		versions, err := describeVersions(crd)
		if err != nil {
			return fmt.Errorf("%s: %w", o.file, err)
		}
		if len(versions) > 1 {
			spec := crd["spec"].(map[string]any)
			spec["conversion"] = map[string]any{"strategy": "None"}
			notes = append(notes,
				"Conversion: the hub converts between these versions with the project's conversion webhook; envtest",
				"has none, so this copy sets conversion strategy None: only apiVersion is rewritten, and an object is",
				"pruned to the storage version's schema when written and to the requested version's when read, so a",
				"field only one version has is lost across versions. Tests should write at the storage version; other",
				"versions are good for metadata and for fields both versions share (e.g. Machine status.phase).")
		}
		body, err := toYAML(crd)
		if err != nil {
			return err
		}
		names := crd["spec"].(map[string]any)["names"].(map[string]any)
		var h strings.Builder
		fmt.Fprintf(&h, "# %s (%s): generated from the real API types for tests only; never ship it, never edit it.\n",
			names["kind"], crd["spec"].(map[string]any)["group"])
		fmt.Fprintf(&h, "# Source: module %s %s, package(s) %s\n", m.Path, m.Version, strings.Join(s.pkgs, ", "))
		fmt.Fprintf(&h, "# Generator: controller-gen %s %s (descriptions dropped, validation as upstream)\n", cgVersion, crdOptions)
		fmt.Fprintf(&h, "# Regenerate: %s\n", regenerate)
		fmt.Fprintf(&h, "# Versions: %s\n", strings.Join(versions, ", "))
		for _, n := range notes {
			fmt.Fprintf(&h, "# %s\n", n)
		}
		if err := os.WriteFile(filepath.Join(out, o.file), append([]byte(h.String()), body...), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func controllerGenVersion(bin string) (string, error) {
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "Version:"))
	if v == "" {
		return "", fmt.Errorf("%s --version printed nothing", bin)
	}
	return v, nil
}

func moduleInfo(path string) (module, error) {
	var m module
	b, err := exec.Command("go", "list", "-m", "-json", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return m, fmt.Errorf("go list -m %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	if m.Dir == "" {
		// Listed but not downloaded yet.
		if b, err = exec.Command("go", "mod", "download", "-json", path).Output(); err != nil {
			return m, fmt.Errorf("go mod download %s: %w", path, err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return m, err
		}
	}
	return m, nil
}

var (
	gateAwareEnumMarker = regexp.MustCompile(`\+openshift:validation:FeatureGateAwareEnum:featureGate=[^,]*,enum=(\S+)`)
	jsonTag             = regexp.MustCompile(`json:"([^",]*)`)
)

// scanGateAwareEnums returns, for each "<struct>.<json field>" of the package in dir carrying
// +openshift:validation:FeatureGateAwareEnum markers, the union of their enum values (in marker order).
func scanGateAwareEnums(dir string) (map[string][]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	found := map[string][]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if field.Doc == nil || field.Tag == nil {
					continue
				}
				var values []string
				seen := map[string]bool{}
				for _, c := range field.Doc.List {
					if m := gateAwareEnumMarker.FindStringSubmatch(c.Text); m != nil {
						for _, v := range strings.Split(m[1], ";") {
							if !seen[v] {
								seen[v] = true
								values = append(values, v)
							}
						}
					}
				}
				tag := jsonTag.FindStringSubmatch(field.Tag.Value)
				if len(values) > 0 && tag != nil {
					found[ts.Name.Name+"."+tag[1]] = values
				}
			}
			return true
		})
	}
	return found, nil
}

// readYAML reads a YAML document into JSON-shaped maps, keeping integers exact.
func readYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

func toYAML(obj map[string]any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

// applyOverrides merges every partial CRD of dir over crd (maps merge key by key, versions by name) and
// returns the merged file names.
func applyOverrides(crd map[string]any, dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no override in %s", dir)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		o, err := readYAML(f)
		if err != nil {
			return "", err
		}
		if o["metadata"].(map[string]any)["name"] != crd["metadata"].(map[string]any)["name"] {
			return "", fmt.Errorf("%s overrides another CRD", f)
		}
		merge(crd, o)
		names = append(names, filepath.Base(f))
	}
	return strings.Join(names, ", "), nil
}

func merge(dst, src map[string]any) {
	for k, sv := range src {
		switch s := sv.(type) {
		case map[string]any:
			if d, ok := dst[k].(map[string]any); ok {
				merge(d, s)
				continue
			}
		case []any:
			if d, ok := dst[k].([]any); ok && k == "versions" {
				for _, item := range s {
					sm, _ := item.(map[string]any)
					matched := false
					for _, ditem := range d {
						if dm, ok := ditem.(map[string]any); ok && sm != nil && dm["name"] == sm["name"] {
							merge(dm, sm)
							matched = true
						}
					}
					if !matched {
						d = append(d, item)
					}
				}
				dst[k] = d
				continue
			}
		}
		dst[k] = sv
	}
}

// setEnum sets the enum of the property at a dotted path in every version's schema.
func setEnum(crd map[string]any, path string, values []string) error {
	enum := make([]any, len(values))
	for i, v := range values {
		enum[i] = v
	}
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		node := v.(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		for _, part := range strings.Split(path, ".") {
			props, _ := node["properties"].(map[string]any)
			next, ok := props[part].(map[string]any)
			if !ok {
				return fmt.Errorf("no property %s in the schema", path)
			}
			node = next
		}
		if old, ok := node["enum"]; ok && !reflect.DeepEqual(old, enum) {
			return fmt.Errorf("%s already has enum %v", path, old)
		}
		node["enum"] = enum
	}
	return nil
}

// describeVersions lists the served versions with their flags, e.g. "v1beta1 (deprecated)".
func describeVersions(crd map[string]any) ([]string, error) {
	var out []string
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		vm := v.(map[string]any)
		var flags []string
		if vm["storage"] == true {
			flags = append(flags, "storage")
		}
		if vm["deprecated"] == true {
			flags = append(flags, "deprecated")
		}
		if vm["served"] != true {
			flags = append(flags, "not served")
		}
		if _, ok := vm["subresources"].(map[string]any)["scale"]; ok {
			flags = append(flags, "scale subresource")
		}
		s := fmt.Sprint(vm["name"])
		if len(flags) > 0 {
			s += " (" + strings.Join(flags, ", ") + ")"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("no versions")
	}
	return out, nil
}
