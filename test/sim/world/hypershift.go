package world

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The world plays HyperShift's NodePool controller for the Agent platform: per NodePool it writes an
// AgentMachineTemplate, the bootstrap (ignition) data Secret and, whose replicas follow the NodePool's, a
// MachineDeployment (upgradeType Replace) or a MachineSet (upgradeType InPlace, inplace.go); per hosted
// cluster the CAPI Cluster, its AgentCluster (with the status the Agent provider's AgentCluster
// controller writes), the HostedControlPlane and the kubeconfig Secrets. It never creates or deletes
// Machines, nor MachineSets other than an InPlace NodePool's: CAPI's own controllers (a real process,
// test/sim/capicore) do, and decide which Machine goes on scale-down.
// (hypershift-operator/controllers/nodepool/{capi,agent,token}.go, openshift/hypershift)

// SetReplicas plays the autoscaler: it sets the NodePool's spec.replicas to n and, as HyperShift does
// next, the MachineDeployment's (or an InPlace NodePool's MachineSet's). CAPI renders (or deletes) the Machines.
func (d *Driver) SetReplicas(ctx context.Context, nodePool types.NamespacedName, n int) error {
	np := newObject(NodePoolGVK)
	if err := d.c.Get(ctx, nodePool, np); err != nil {
		return fmt.Errorf("world: reading NodePool %s: %w", nodePool, err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	if err := unstructured.SetNestedField(np.Object, int64(n), "spec", "replicas"); err != nil {
		return err
	}
	if err := d.c.Patch(ctx, np, patch); err != nil {
		return fmt.Errorf("world: scaling NodePool %s: %w", nodePool, err)
	}
	d.wrote()
	defer d.lock(phaseNodePools)()
	return d.renderNodePool(withLiveReads(ctx), np, true)
}

// MachinesOf returns the Machines CAPI made for a NodePool (deleting ones included).
func (d *Driver) MachinesOf(ctx context.Context, nodePool types.NamespacedName) ([]unstructured.Unstructured, error) {
	np := newObject(NodePoolGVK)
	if err := d.c.Get(ctx, nodePool, np); err != nil {
		return nil, err
	}
	l := newList(MachineGVK)
	if err := d.c.List(ctx, l, client.InNamespace(controlPlaneNamespaceOf(np))); err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, m := range l.Items {
		if m.GetAnnotations()[AnnotationNodePool] == nodePoolKey(np) {
			out = append(out, m)
		}
	}
	return out, nil
}

// MachineDeploymentOf names the MachineDeployment HyperShift renders for a NodePool.
func MachineDeploymentOf(s *Scenario) types.NamespacedName {
	return types.NamespacedName{Namespace: s.ControlPlaneNamespace, Name: s.NodePool.Name}
}

func nodePoolKey(np *unstructured.Unstructured) string { return np.GetNamespace() + "/" + np.GetName() }

func controlPlaneNamespaceOf(np *unstructured.Unstructured) string {
	clusterName, _, _ := unstructured.NestedString(np.Object, "spec", "clusterName")
	return ControlPlaneNamespace(np.GetNamespace(), clusterName)
}

func (d *Driver) reconcileNodePools(ctx context.Context) error {
	nps, err := d.listInPass(ctx, NodePoolGVK)
	if err != nil {
		return err
	}
	var errs firstError
	_ = d.forEach(ctx, len(nps), func(ctx context.Context, i int) error {
		errs.add(d.renderNodePool(ctx, nps[i], !d.opts.ManualMachines))
		return nil
	})
	return errs.get()
}

// renderNodePool writes what HyperShift renders for an Agent NodePool. With scale false the
// MachineDeployment's replicas are left as they are (Options.ManualMachines).
func (d *Driver) renderNodePool(ctx context.Context, np *unstructured.Unstructured, scale bool) error {
	platform, _, _ := unstructured.NestedString(np.Object, "spec", "platform", "type")
	replicas, found, _ := unstructured.NestedInt64(np.Object, "spec", "replicas")
	clusterName, _, _ := unstructured.NestedString(np.Object, "spec", "clusterName")
	cpNS := controlPlaneNamespaceOf(np)
	if platform != "Agent" || !found || clusterName == "" || !d.inScope(cpNS) {
		return nil
	}
	infraID, err := d.ensureHostedClusterInfra(ctx, types.NamespacedName{Namespace: np.GetNamespace(), Name: clusterName}, cpNS)
	if err != nil || infraID == "" {
		return err
	}
	selector, _, _ := unstructured.NestedMap(np.Object, "spec", "platform", "agent", "agentLabelSelector")
	hash := specHash(selector)
	templateName := np.GetName() + "-" + hash
	secretName := "user-data-" + np.GetName() + "-" + hash
	if err := d.ensureRendered(ctx, np, cpNS, templateName, secretName, selector); err != nil {
		return err
	}
	if upgradeType, _, _ := unstructured.NestedString(np.Object, "spec", "management", "upgradeType"); upgradeType == UpgradeTypeInPlace {
		return d.ensureMachineSet(ctx, np, cpNS, infraID, templateName, secretName, replicas, scale)
	}
	return d.ensureMachineDeployment(ctx, np, cpNS, infraID, templateName, secretName, replicas, scale)
}

// specHash is HyperShift's short hash of what rolls the NodePool's machines (here: the Agent selector).
func specHash(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:8]
}

// ensureRendered creates the AgentMachineTemplate and the bootstrap data Secret once per name.
func (d *Driver) ensureRendered(ctx context.Context, np *unstructured.Unstructured, cpNS, templateName, secretName string, selector map[string]any) error {
	key := cpNS + "/" + templateName
	if d.rendered(key) {
		return nil
	}
	amt := newObject(AgentMachineTemplateGVK)
	amt.SetNamespace(cpNS)
	amt.SetName(templateName)
	amt.SetAnnotations(map[string]string{AnnotationNodePool: nodePoolKey(np)})
	spec := map[string]any{}
	if selector != nil {
		spec["agentLabelSelector"] = selector
	}
	amt.Object["spec"] = map[string]any{"template": map[string]any{"spec": spec}}
	if err := d.createIfAbsent(ctx, amt); err != nil {
		return err
	}
	ign, err := ignitionFor(np, cpNS)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: secretName,
			Annotations: map[string]string{AnnotationNodePool: nodePoolKey(np)}},
		Data: map[string][]byte{"value": ign, "format": []byte("ignition")},
	}
	if err := d.createIfAbsent(ctx, secret); err != nil {
		return err
	}
	d.markRendered(key)
	return nil
}

// ignitionFor is the pointer ignition HyperShift's token controller writes: one merge source on the
// ignition server, with the token as a Bearer header plus the NodePool and config hash headers.
func ignitionFor(np *unstructured.Unstructured, cpNS string) ([]byte, error) {
	token := base64.StdEncoding.EncodeToString([]byte("token-" + nodePoolKey(np)))
	return json.Marshal(map[string]any{
		"ignition": map[string]any{
			"version": "3.2.0",
			"config": map[string]any{"merge": []any{map[string]any{
				"source": "https://ignition-server-" + cpNS + ".apps.example.com/ignition",
				"httpHeaders": []any{
					map[string]any{"name": "Authorization", "value": "Bearer " + token},
					map[string]any{"name": "NodePool", "value": nodePoolKey(np)},
					map[string]any{"name": "TargetConfigVersionHash", "value": specHash(nodePoolKey(np))},
				},
			}}},
		},
	})
}

// ensureMachineDeployment creates the NodePool's MachineDeployment, with the fields CAPI's admission
// webhooks would default (this API server runs none), and keeps its replicas and template current.
func (d *Driver) ensureMachineDeployment(ctx context.Context, np *unstructured.Unstructured, cpNS, infraID, templateName, secretName string, replicas int64, scale bool) error {
	md, err := d.renderedFor(ctx, MachineDeploymentGVK, cpNS, np)
	if err != nil {
		return err
	}
	template := machineTemplate(np, infraID, templateName, secretName, "cluster.x-k8s.io/deployment-name", np.GetName())
	if md == nil {
		md = newObject(MachineDeploymentGVK)
		md.SetNamespace(cpNS)
		md.SetName(np.GetName())
		md.SetLabels(map[string]string{LabelClusterName: infraID})
		md.SetAnnotations(map[string]string{AnnotationNodePool: nodePoolKey(np)})
		md.Object["spec"] = map[string]any{
			"clusterName": infraID,
			"replicas":    replicas,
			// CAPI's webhook adds the cluster-name label to the selector; without it CAPI's MachineDeployment and
			// MachineSet controllers rewrite the MachineSet's selector back and forth forever.
			"selector": map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/deployment-name": np.GetName(), LabelClusterName: infraID}},
			"rollout": map[string]any{"strategy": map[string]any{
				"type":          "RollingUpdate",
				"rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)},
			}},
			"deletion": map[string]any{"order": "Random"},
			"template": template,
		}
		if !scale {
			md.Object["spec"].(map[string]any)["replicas"] = int64(0)
		}
		if err := d.createIfAbsent(ctx, md); err != nil {
			return err
		}
		d.log.Info("machinedeployment created", "machineDeployment", client.ObjectKeyFromObject(md), "replicas", replicas)
		return nil
	}
	return d.keepRendered(ctx, md, template, templateName, replicas, scale)
}

// renderedFor is the object of kind gvk HyperShift rendered for np in cpNS (named after np), nil when none.
func (d *Driver) renderedFor(ctx context.Context, gvk schema.GroupVersionKind, cpNS string, np *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	list, err := d.listInPass(ctx, gvk)
	if err != nil {
		return nil, err
	}
	for _, o := range list {
		if o.GetNamespace() == cpNS && o.GetName() == np.GetName() {
			return o, nil
		}
	}
	return nil, nil
}

// machineTemplate is the Machine template HyperShift renders into a NodePool's MachineDeployment or
// MachineSet: CAPI's cluster label plus the selector label (key, value), the NodePool annotation CAPI
// copies to Machines, the bootstrap Secret and the AgentMachineTemplate.
func machineTemplate(np *unstructured.Unstructured, infraID, templateName, secretName, selectorKey, selectorValue string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{LabelClusterName: infraID, selectorKey: selectorValue},
			"annotations": map[string]any{AnnotationNodePool: nodePoolKey(np)},
		},
		"spec": map[string]any{
			"clusterName": infraID,
			"bootstrap":   map[string]any{"dataSecretName": secretName},
			"infrastructureRef": map[string]any{
				"apiGroup": AgentMachineTemplateGVK.Group, "kind": AgentMachineTemplateGVK.Kind, "name": templateName,
			},
			"deletion": map[string]any{"nodeDeletionTimeoutSeconds": int64(10)},
		},
	}
}

// keepRendered keeps what HyperShift rendered for a NodePool (a MachineDeployment or an InPlace
// NodePool's MachineSet) current: its template names templateName and, when scale, its replicas follow
// the NodePool's.
func (d *Driver) keepRendered(ctx context.Context, obj *unstructured.Unstructured, template map[string]any, templateName string, replicas int64, scale bool) error {
	have, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	haveTemplate, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "infrastructureRef", "name")
	if (!scale || have == replicas) && haveTemplate == templateName {
		return nil
	}
	patch := map[string]any{"spec": map[string]any{"template": template}}
	if scale {
		patch["spec"].(map[string]any)["replicas"] = replicas
	}
	raw, _ := json.Marshal(patch)
	if err := d.c.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.MergePatchType, raw)); err != nil {
		return client.IgnoreNotFound(err)
	}
	d.wrote()
	d.log.Info("scaled", "kind", obj.GetKind(), "object", client.ObjectKeyFromObject(obj), "from", have, "to", replicas)
	return nil
}

// ensureHostedClusterInfra writes, once per hosted cluster, what HyperShift and the Agent provider's
// AgentCluster controller write in the control-plane namespace for CAPI: the kubeconfig Secrets, the
// HostedControlPlane, the AgentCluster (ready, with its ClusterDeployment reference) and the Cluster. It
// returns the Cluster's name (the HostedCluster's infraID); "" while the HostedCluster does not exist.
func (d *Driver) ensureHostedClusterInfra(ctx context.Context, hostedCluster types.NamespacedName, cpNS string) (string, error) {
	hc := newObject(HostedClusterGVK)
	if err := d.read(ctx, hostedCluster, hc); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	infraID, _, _ := unstructured.NestedString(hc.Object, "spec", "infraID")
	if infraID == "" {
		infraID = hostedCluster.Name
	}
	key := cpNS + "/cluster/" + infraID
	if d.rendered(key) {
		return infraID, nil
	}
	if len(d.opts.Kubeconfig) == 0 {
		return "", fmt.Errorf("world: Options.Kubeconfig is required to render hosted cluster %s for CAPI", hostedCluster)
	}
	// The hosted cluster's API server is this one: CAPI's ClusterCache reads Nodes through it, the
	// provider's NodeProviderID controller through admin-kubeconfig.
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: infraID + "-kubeconfig", Labels: map[string]string{LabelClusterName: infraID}},
			Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": d.opts.Kubeconfig}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "admin-kubeconfig"}, Data: map[string][]byte{"kubeconfig": d.opts.Kubeconfig}},
	} {
		if err := d.createIfAbsent(ctx, s); err != nil {
			return "", err
		}
	}
	endpoint := map[string]any{"host": "api." + hostedCluster.Name + ".example.com", "port": int64(6443)}
	cluster := newObject(ClusterGVK)
	cluster.SetNamespace(cpNS)
	cluster.SetName(infraID)
	clusterSpec := map[string]any{
		"controlPlaneEndpoint": endpoint,
		"infrastructureRef":    map[string]any{"apiGroup": AgentClusterGVK.Group, "kind": AgentClusterGVK.Kind, "name": infraID},
	}
	hcp, err := d.ensureHostedControlPlane(ctx, cpNS, hostedCluster, endpoint)
	if err != nil {
		return "", err
	}
	if hcp {
		clusterSpec["controlPlaneRef"] = map[string]any{"apiGroup": HostedControlPlaneGVK.Group, "kind": HostedControlPlaneGVK.Kind, "name": hostedCluster.Name}
	}
	cluster.Object["spec"] = clusterSpec
	if err := d.createIfAbsent(ctx, cluster); err != nil {
		return "", err
	}
	ac := newObject(AgentClusterGVK)
	ac.SetNamespace(cpNS)
	ac.SetName(infraID)
	// HyperShift writes the endpoint and the ignition server; the provider's controller the status.
	ac.Object["spec"] = map[string]any{
		"controlPlaneEndpoint": endpoint,
		"ignitionEndpoint":     map[string]any{"url": "https://ignition-server-" + cpNS + ".apps.example.com/ignition"},
	}
	if err := d.createIfAbsent(ctx, ac); err != nil {
		return "", err
	}
	// The AgentCluster controller: ClusterDeployment named after the AgentCluster, then ready.
	if err := d.c.Get(ctx, client.ObjectKeyFromObject(ac), ac); err != nil {
		return "", err
	}
	if ready, _, _ := unstructured.NestedBool(ac.Object, "status", "ready"); !ready {
		_ = unstructured.SetNestedMap(ac.Object, map[string]any{"namespace": cpNS, "name": infraID}, "status", "clusterDeploymentReference")
		_ = unstructured.SetNestedField(ac.Object, true, "status", "ready")
		if err := d.c.Status().Update(ctx, ac); err != nil {
			return "", err
		}
		d.wrote()
	}
	d.markRendered(key)
	d.log.Info("hosted cluster rendered for CAPI", "cluster", types.NamespacedName{Namespace: cpNS, Name: infraID})
	return infraID, nil
}

// ensureHostedControlPlane creates the HostedControlPlane (named after the HostedCluster) with the status
// HyperShift's control-plane operator reports once the control plane runs: initialized, ready, and managed
// outside CAPI (so CAPI allows deleting Nodes without control-plane Machines). It reports false when this
// API server does not serve the kind.
func (d *Driver) ensureHostedControlPlane(ctx context.Context, cpNS string, hostedCluster types.NamespacedName, endpoint map[string]any) (bool, error) {
	name := hostedCluster.Name
	hcp := newObject(HostedControlPlaneGVK)
	hcp.SetNamespace(cpNS)
	hcp.SetName(name)
	spec := controlPlaneSpec(hostedCluster.Namespace) // the Agents live in the HostedCluster's agentNamespace
	spec["releaseImage"], spec["issuerURL"], spec["infraID"] = releaseImage, "https://kubernetes.default.svc", name
	hcp.Object["spec"] = spec
	if err := d.c.Create(ctx, hcp); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("world: creating HostedControlPlane %s/%s: %w", cpNS, name, err)
		}
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(hcp), hcp); err != nil {
			return false, err
		}
	} else {
		d.wrote()
	}
	if ok, _, _ := unstructured.NestedBool(hcp.Object, "status", "initialized"); ok {
		return true, nil
	}
	_ = unstructured.SetNestedField(hcp.Object, true, "status", "initialized")
	_ = unstructured.SetNestedField(hcp.Object, true, "status", "ready")
	_ = unstructured.SetNestedField(hcp.Object, true, "status", "externalManagedControlPlane")
	_ = unstructured.SetNestedMap(hcp.Object, endpoint, "status", "controlPlaneEndpoint")
	if err := d.c.Status().Update(ctx, hcp); err != nil {
		return false, fmt.Errorf("world: HostedControlPlane status: %w", err)
	}
	d.wrote()
	return true, nil
}

func (d *Driver) createIfAbsent(ctx context.Context, obj client.Object) error {
	if err := d.c.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("world: creating %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	d.wrote()
	return nil
}

func (d *Driver) rendered(key string) bool {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return d.renderedOnce[key]
}

func (d *Driver) markRendered(key string) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.renderedOnce[key] = true
}
