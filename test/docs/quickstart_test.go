package docs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// yamlBlock is one ```yaml block of a markdown document and the objects in it.
type yamlBlock struct {
	name    string // where it is, for failure messages: "docs/quickstart.md block 2 (line 57)"
	text    string
	objects []*unstructured.Unstructured
}

var yamlFence = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// yamlBlocks extracts the ```yaml blocks of md (named after file) and decodes every object in each.
func yamlBlocks(t *testing.T, file, md string) []yamlBlock {
	t.Helper()
	var out []yamlBlock
	for i, m := range yamlFence.FindAllStringSubmatchIndex(md, -1) {
		b := yamlBlock{
			name: fmt.Sprintf("%s block %d (line %d)", file, i+1, strings.Count(md[:m[0]], "\n")+1),
			text: md[m[2]:m[3]],
		}
		var err error
		if b.objects, err = decodeObjects(b.text); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		out = append(out, b)
	}
	return out
}

// decodeObjects decodes the YAML documents of text (separated by ---), skipping empty ones; numbers
// decode as the API machinery decodes them (int64, not float64).
func decodeObjects(text string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "{}" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}

// applyBlock server-side applies every object of b (namespaced ones into their namespace, or into
// namespace when they name none), creating the namespace first; the client's config asks for strict
// field validation, so a field the served schema lacks is an error. It reports the first error, naming
// the block and the object.
func applyBlock(ctx context.Context, c client.Client, b yamlBlock, namespace string) error {
	if len(b.objects) == 0 {
		return fmt.Errorf("%s: no objects", b.name)
	}
	for _, obj := range b.objects {
		obj = obj.DeepCopy()
		namespaced, err := c.IsObjectNamespaced(obj)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", b.name, obj.GetKind(), obj.GetName(), err)
		}
		if namespaced {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}}
			if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: namespace %s: %w", b.name, ns.Name, err)
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("quickstart-test"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s: %s %s: %w", b.name, obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// consoleCRDs are the console.openshift.io fixtures (ConsoleYAMLSample, ConsoleQuickStart) the bundle's
// console objects need.
func consoleCRDs(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// bundleConsoleObjects are the console.openshift.io objects the bundle ships, by kind.
func bundleConsoleObjects(t *testing.T) map[string]yamlBlock {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "bundle", "manifests", "*_console.openshift.io_v1_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]yamlBlock{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeObjects(string(b))
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %v (%d objects)", f, err, len(objs))
		}
		out[objs[0].GetKind()] = yamlBlock{name: filepath.Join("bundle", "manifests", filepath.Base(f)), text: string(b), objects: objs}
	}
	for _, kind := range []string{"ConsoleYAMLSample", "ConsoleQuickStart"} {
		if _, ok := out[kind]; !ok {
			t.Fatalf("the bundle ships no %s (make bundle; config/manifests/console)", kind)
		}
	}
	return out
}

// TestQuickstartApplies: every ```yaml block of docs/quickstart.md, the bundle's ConsoleYAMLSample and
// ConsoleQuickStart, and the YAML of that sample apply to a real API server serving our CRDs, the
// external ones (HyperShift, Assisted Installer, Cluster API) and the console's, with strict field
// validation: a wrong field name, a value a CRD refuses or a missing required field fails the test,
// naming the block.
func TestQuickstartApplies(t *testing.T) {
	ctx := context.Background()
	blocks := yamlBlocks(t, "docs/quickstart.md", readRepoFile(t, "docs", "quickstart.md"))
	if len(blocks) < 4 {
		t.Fatalf("docs/quickstart.md has %d yaml blocks: the scan is broken", len(blocks))
	}
	console := bundleConsoleObjects(t)
	_, c := testenv.StartForTest(t, testenv.Options{ExtraCRDPaths: []string{consoleCRDs(t)}})

	for _, b := range blocks {
		if err := applyBlock(ctx, c, b, "default"); err != nil {
			t.Error(err)
		}
	}
	for _, kind := range []string{"ConsoleYAMLSample", "ConsoleQuickStart"} {
		if err := applyBlock(ctx, c, console[kind], ""); err != nil {
			t.Error(err)
		}
	}
	sample := consoleSample(t, console["ConsoleYAMLSample"])
	// The console creates the sample in the project the user is in: its own namespace here, so that it
	// does not merely re-apply the quickstart's pool.
	if err := applyBlock(ctx, c, sample, "console-sample"); err != nil {
		t.Error(err)
	}
}

// consoleSample is the YAML of the ConsoleYAMLSample as a block.
func consoleSample(t *testing.T, b yamlBlock) yamlBlock {
	t.Helper()
	text, _, _ := unstructured.NestedString(b.objects[0].Object, "spec", "yaml")
	objs, err := decodeObjects(text)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s spec.yaml: %v (%d objects)", b.name, err, len(objs))
	}
	return yamlBlock{name: b.name + " spec.yaml", text: text, objects: objs}
}

// quickstartObject is the one object of kind in docs/quickstart.md's blocks.
func quickstartObject(t *testing.T, blocks []yamlBlock, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, b := range blocks {
		for _, o := range b.objects {
			if o.GetKind() == kind && (name == "" || o.GetName() == name) {
				found = append(found, o)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/quickstart.md: want one %s %s, found %d", kind, name, len(found))
	}
	return found[0]
}

func str(t *testing.T, o *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedString(o.Object, path...)
	if !ok || err != nil {
		t.Fatalf("%s %s: no string at %s (%v)", o.GetKind(), o.GetName(), strings.Join(path, "."), err)
	}
	return v
}

func num(t *testing.T, o *unstructured.Unstructured, path ...string) int64 {
	t.Helper()
	v, ok, err := unstructured.NestedInt64(o.Object, path...)
	if !ok || err != nil {
		t.Fatalf("%s %s: no integer at %s (%v)", o.GetKind(), o.GetName(), strings.Join(path, "."), err)
	}
	return v
}

// TestQuickstartFitsTogether: the quickstart's objects name each other (pool -> NodePool, InfraEnv,
// Secret, hosted cluster; InfraEnv -> pull secret), all in one namespace; the pool's Agent labels match
// the NodePool's agentLabelSelector; autoscaling keeps min >= 1 and the pool's maxVMs at its max; the
// bundle's YAML sample is the quickstart's pool and every YAML of the console quick start is a block of
// the quickstart, so the console and the guide cannot drift apart.
func TestQuickstartFitsTogether(t *testing.T) {
	md := readRepoFile(t, "docs", "quickstart.md")
	blocks := yamlBlocks(t, "docs/quickstart.md", md)
	pool := quickstartObject(t, blocks, "VsphereAgentPool", "")
	np := quickstartObject(t, blocks, "NodePool", str(t, pool, "spec", "nodePoolRef", "name"))
	ie := quickstartObject(t, blocks, "InfraEnv", str(t, pool, "spec", "infraEnvRef", "name"))
	creds := quickstartObject(t, blocks, "Secret", str(t, pool, "spec", "vsphere", "credentialsSecretRef", "name"))
	pull := quickstartObject(t, blocks, "Secret", str(t, ie, "spec", "pullSecretRef", "name"))
	ns := pool.GetNamespace()
	for _, o := range []*unstructured.Unstructured{np, ie, creds, pull} {
		if o.GetNamespace() != ns {
			t.Errorf("%s %s is in namespace %q, the pool in %q: the pool reads them from its own", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
		}
	}
	cluster := str(t, pool, "spec", "hostedClusterRef", "name")
	if got := str(t, np, "spec", "clusterName"); got != cluster {
		t.Errorf("NodePool clusterName %q, the pool's hostedClusterRef %q", got, cluster)
	}
	if got, want := str(t, pool, "spec", "controlPlaneNamespace"), ns+"-"+cluster; got != want {
		t.Errorf("pool controlPlaneNamespace %q, HyperShift renders into %q", got, want)
	}
	sel := &metav1.LabelSelector{}
	selMap, _, _ := unstructured.NestedMap(np.Object, "spec", "platform", "agent", "agentLabelSelector")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(selMap, sel); err != nil {
		t.Fatal(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || selector.Empty() {
		t.Fatalf("NodePool agentLabelSelector %v: %v (empty: the quickstart must show one)", selMap, err)
	}
	agentLabels, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "agent", "labels")
	if !selector.Matches(labels.Set(agentLabels)) {
		t.Errorf("the pool's spec.agent.labels %v do not match the NodePool's agentLabelSelector %s", agentLabels, selector)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(np.Object, "spec", "replicas"); ok {
		t.Error("the NodePool sets replicas: the quickstart shows autoScaling")
	}
	if lo, hi := num(t, np, "spec", "autoScaling", "min"), num(t, np, "spec", "autoScaling", "max"); lo < 1 || hi < lo {
		t.Errorf("NodePool autoScaling min %d max %d", lo, hi)
	} else if got := num(t, pool, "spec", "limits", "maxVMs"); got != hi {
		t.Errorf("pool limits.maxVMs %d, the NodePool's autoScaling.max %d: the guide says to keep them equal", got, hi)
	}
	if !strings.Contains(md, "docs/vcenter-role.sh") || !strings.Contains(md, "oc get vap,va") {
		t.Error("docs/quickstart.md lost the role script or the watch command")
	}
	for _, l := range regexp.MustCompile(`\]\(([^)#\s]+)(?:#([^)\s]+))?\)`).FindAllStringSubmatch(md, -1) {
		if strings.Contains(l[1], "://") {
			continue
		}
		if target := readRepoFile(t, "docs", l[1]); l[2] != "" && !hasHeading(target, l[2]) {
			t.Errorf("docs/quickstart.md links %s#%s: no such heading", l[1], l[2])
		}
	}

	console := bundleConsoleObjects(t)
	sample := consoleSample(t, console["ConsoleYAMLSample"]).objects[0]
	want := pool.DeepCopy()
	want.SetNamespace("")
	if !reflect.DeepEqual(sample.Object, want.Object) {
		t.Errorf("the ConsoleYAMLSample's yaml is not the quickstart's pool (namespace aside):\n%v\nwant:\n%v", sample.Object, want.Object)
	}
	if k, _, _ := unstructured.NestedString(console["ConsoleYAMLSample"].objects[0].Object, "spec", "targetResource", "kind"); k != "VsphereAgentPool" {
		t.Errorf("ConsoleYAMLSample targets %q", k)
	}
	tasks, _, _ := unstructured.NestedSlice(console["ConsoleQuickStart"].objects[0].Object, "spec", "tasks")
	var quickstartYAML []string
	for _, b := range blocks {
		quickstartYAML = append(quickstartYAML, b.text)
	}
	shown := 0
	for i, task := range tasks {
		desc, _, _ := unstructured.NestedString(task.(map[string]any), "description")
		for _, m := range yamlFence.FindAllStringSubmatch(desc, -1) {
			shown++
			if !slices.Contains(quickstartYAML, m[1]) {
				t.Errorf("ConsoleQuickStart task %d shows YAML that is no block of docs/quickstart.md:\n%s", i+1, m[1])
			}
		}
	}
	if shown < 4 {
		t.Errorf("the ConsoleQuickStart shows %d YAML blocks, want the quickstart's Secret, InfraEnv, NodePool and pool", shown)
	}
}
