package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// The kinds gathered. Foreign kinds (HyperShift, Agent provider, Assisted Installer) are written without
// the spec fields that may carry credentials (see sanitize).
var (
	poolsGVR         = afv1.GroupVersion.WithResource("vsphereagentpools")
	vsphereAgentsGVR = afv1.GroupVersion.WithResource("vsphereagents")
	nodePoolsGVR     = agents.NodePoolGVK.GroupVersion().WithResource("nodepools")
	agentMachinesGVR = agents.AgentMachineGVK.GroupVersion().WithResource("agentmachines")
	agentsGVR        = agents.AgentGVK.GroupVersion().WithResource("agents")
	infraEnvsGVR     = agents.InfraEnvGVK.GroupVersion().WithResource("infraenvs")
	eventsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	secretsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// operatorNamespaceKinds are gathered whole from the operator's namespace.
var operatorNamespaceKinds = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "services"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"},
	{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"},
}

// eventKinds are the involved-object kinds whose events are gathered.
var eventKinds = []string{"VsphereAgentPool", "VsphereAgent", "NodePool", "AgentMachine", "Agent", "InfraEnv"}

// collector writes objects under out in oc adm inspect's layout: namespaces/<ns>/<group>/<resource>/<name>.yaml.
type collector struct {
	dyn               dynamic.Interface
	kube              kubernetes.Interface
	out               string
	operatorNamespace string
	callTimeout       time.Duration
	logLimit          int64

	objects  int
	problems []string
}

// problem records what could not be gathered (errors.txt); gathering goes on.
func (c *collector) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *collector) collect(ctx context.Context) error {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	pools := c.list(ctx, poolsGVR, "", keepAll)
	c.list(ctx, vsphereAgentsGVR, "", keepAll)
	for _, p := range pools {
		c.poolReferences(ctx, p)
	}
	c.list(ctx, agentMachinesGVR, "", sanitize)
	c.list(ctx, agentsGVR, "", sanitize)
	c.list(ctx, infraEnvsGVR, "", sanitize)
	c.events(ctx)
	for _, gvr := range operatorNamespaceKinds {
		c.list(ctx, gvr, c.operatorNamespace, keepAll)
	}
	c.list(ctx, configMapsGVR, c.operatorNamespace, keysOnly)
	c.list(ctx, secretsGVR, c.operatorNamespace, keysOnly)
	c.managerLogsAndMetrics(ctx)
	sort.Strings(c.problems)
	text := strings.Join(c.problems, "\n")
	if text != "" {
		text += "\n"
	}
	return os.WriteFile(filepath.Join(c.out, "errors.txt"), []byte(text), 0o644)
}

// poolReferences gathers the NodePool a pool serves and its credentials Secret's names and keys.
func (c *collector) poolReferences(ctx context.Context, pool unstructured.Unstructured) {
	ns := pool.GetNamespace()
	if name, _, _ := unstructured.NestedString(pool.Object, "spec", "nodePoolRef", "name"); name != "" {
		c.get(ctx, nodePoolsGVR, ns, name, sanitize)
	}
	if name, _, _ := unstructured.NestedString(pool.Object, "spec", "vsphere", "credentialsSecretRef", "name"); name != "" {
		secretNS := ns
		if other, _, _ := unstructured.NestedString(pool.Object, "spec", "vsphere", "credentialsSecretRef", "namespace"); other != "" {
			secretNS = other
		}
		c.get(ctx, secretsGVR, secretNS, name, keysOnly)
	}
}

// events gathers the events of the kinds above, all namespaces (core/v1 shows events.k8s.io ones too).
func (c *collector) events(ctx context.Context) {
	for _, kind := range eventKinds {
		c.listWith(ctx, eventsGVR, "", metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind}, keepAll)
	}
}

type shaper func(*unstructured.Unstructured)

func (c *collector) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, shape shaper) []unstructured.Unstructured {
	return c.listWith(ctx, gvr, ns, metav1.ListOptions{}, shape)
}

func (c *collector) listWith(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions, shape shaper) []unstructured.Unstructured {
	var items []unstructured.Unstructured
	for {
		cctx, cancel := context.WithTimeout(ctx, c.callTimeout)
		l, err := c.dyn.Resource(gvr).Namespace(ns).List(cctx, opts)
		cancel()
		if err != nil {
			c.problem("list %s in %q: %v", gvr.GroupResource(), ns, explain(err))
			return items
		}
		items = append(items, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	for i := range items {
		c.write(gvr, &items[i], shape)
	}
	return items
}

func (c *collector) get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, shape shaper) {
	cctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	o, err := c.dyn.Resource(gvr).Namespace(ns).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		c.problem("get %s %s/%s: %v", gvr.GroupResource(), ns, name, explain(err))
		return
	}
	c.write(gvr, o, shape)
}

// explain shortens "the server could not find the requested resource" for a CRD that is not installed.
func explain(err error) string {
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return "not found (kind not installed, or the object does not exist): " + err.Error()
	}
	return err.Error()
}

func (c *collector) write(gvr schema.GroupVersionResource, o *unstructured.Unstructured, shape shaper) {
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a != nil {
		delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		o.SetAnnotations(a)
	}
	shape(o)
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	ns := o.GetNamespace()
	if ns == "" {
		ns = "_cluster"
	}
	dir := filepath.Join(c.out, "namespaces", ns, group, gvr.Resource)
	b, err := yaml.Marshal(o.Object)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, o.GetName()+".yaml"), []byte(scrubText(string(b))), 0o644)
	}
	if err != nil {
		c.problem("write %s %s/%s: %v", gvr.GroupResource(), ns, o.GetName(), err)
		return
	}
	c.objects++
}

func keepAll(*unstructured.Unstructured) {}

// secretSpecFields are spec fields of foreign kinds that may carry credentials (ignition overrides with
// pull secrets or passwords, installer arguments); they are replaced by a marker.
var secretSpecFields = []string{"ignitionConfigOverride", "ignitionConfigOverrides", "installerArgs"}

// sanitize keeps metadata, status and the spec without its secret-bearing fields.
func sanitize(o *unstructured.Unstructured) {
	spec, ok := o.Object["spec"].(map[string]any)
	if !ok {
		return
	}
	for _, f := range secretSpecFields {
		if _, ok := spec[f]; ok {
			spec[f] = redacted
		}
	}
}

// keysOnly keeps a Secret's or ConfigMap's metadata, type and key names: never a value.
func keysOnly(o *unstructured.Unstructured) {
	var keys []string
	for _, field := range []string{"data", "stringData", "binaryData"} {
		if m, ok := o.Object[field].(map[string]any); ok {
			for k := range m {
				keys = append(keys, k)
			}
		}
		delete(o.Object, field)
	}
	slices.Sort(keys)
	o.Object["keys"] = keys
}

// managerLogsAndMetrics gathers the manager pods' logs (current and previous container) and metrics
// (through the API server's pod proxy, so with the gatherer's own authorization).
func (c *collector) managerLogsAndMetrics(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	pods, err := c.kube.CoreV1().Pods(c.operatorNamespace).List(cctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	cancel()
	if err != nil {
		c.problem("list manager pods in %q: %v", c.operatorNamespace, explain(err))
		return
	}
	if len(pods.Items) == 0 {
		c.problem("no manager pod (label control-plane=controller-manager) in %q: no logs or metrics", c.operatorNamespace)
	}
	for _, pod := range pods.Items {
		dir := filepath.Join(c.out, "namespaces", pod.Namespace, "pods", pod.Name)
		for _, ctr := range pod.Spec.Containers {
			for _, previous := range []bool{false, true} {
				c.podLog(ctx, pod, ctr.Name, previous, dir)
			}
		}
		c.podMetrics(ctx, pod, dir)
	}
}

func (c *collector) podLog(ctx context.Context, pod corev1.Pod, container string, previous bool, dir string) {
	cctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	limit := c.logLimit
	b, err := c.kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container, Previous: previous, LimitBytes: &limit}).DoRaw(cctx)
	name := "current.log"
	if previous {
		name = "previous.log"
	}
	if err != nil {
		if !previous { // no previous container is the normal case
			c.problem("logs of %s/%s container %s: %v", pod.Namespace, pod.Name, container, err)
		}
		return
	}
	c.writeFile(filepath.Join(dir, container, "logs", name), b)
}

func (c *collector) podMetrics(ctx context.Context, pod corev1.Pod, dir string) {
	port := ""
	for _, ctr := range pod.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.Name == "metrics" {
				port = fmt.Sprint(p.ContainerPort)
			}
		}
	}
	if port == "" {
		c.problem("pod %s/%s has no port named metrics", pod.Namespace, pod.Name)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	b, err := c.kube.CoreV1().Pods(pod.Namespace).ProxyGet("https", pod.Name, port, "/metrics", nil).DoRaw(cctx)
	if err != nil {
		c.problem("metrics of %s/%s: %v", pod.Namespace, pod.Name, err)
		return
	}
	c.writeFile(filepath.Join(dir, "metrics.txt"), b)
}

func (c *collector) writeFile(path string, b []byte) {
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, []byte(scrubText(string(b))), 0o644)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		c.problem("write %s: %v", path, err)
	}
}
