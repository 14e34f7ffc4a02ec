package world

import (
	"context"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// SetupOptions describe the hub objects of one scenario. Zero values get the defaults shown.
type SetupOptions struct {
	// Namespace holds the HostedCluster, NodePool, InfraEnv and Secret ("clusters"). Created if missing.
	Namespace string
	// HostedCluster name ("hc1"). Its control-plane namespace is ControlPlaneNamespace(Namespace, HostedCluster).
	HostedCluster string
	// NodePool name ("np1").
	NodePool string
	// InfraEnv name ("infra1").
	InfraEnv string
	// AgentLabels is the NodePool's agentLabelSelector.matchLabels (the pool's agent.labels);
	// default {"agent-forge.containeroo.ch/nodepool": <NodePool>}.
	AgentLabels map[string]string
	// Replicas is the NodePool's initial spec.replicas (0).
	Replicas int
	// UpgradeType is the NodePool's spec.management.upgradeType (UpgradeTypeReplace, as HyperShift's
	// Agent examples; UpgradeTypeInPlace renders a MachineSet).
	UpgradeType string
	// ISOURL is the InfraEnv's status.isoDownloadURL; empty leaves the image not created yet.
	ISOURL string
	// VCenter is the simulator URL (with user:password) for the credentials Secret; nil: no Secret.
	VCenter *url.URL
	// SecretName is the credentials Secret's name ("vsphere-credentials").
	SecretName string
}

// Scenario names the hub objects Setup created.
type Scenario struct {
	Namespace             string
	ControlPlaneNamespace string
	HostedCluster         types.NamespacedName
	NodePool              types.NamespacedName
	InfraEnv              types.NamespacedName
	// Secret is the credentials Secret (zero when no VCenter was given).
	Secret      types.NamespacedName
	AgentLabels map[string]string
}

// Namespaces are the namespaces the scenario uses (for Options.Namespaces).
func (s *Scenario) Namespaces() []string { return []string{s.Namespace, s.ControlPlaneNamespace} }

// Setup creates the namespaces, HostedCluster, NodePool, InfraEnv (with its image status when
// ISOURL is set) and credentials Secret of a scenario. Existing objects are left as they are.
func Setup(ctx context.Context, c client.Client, o SetupOptions) (*Scenario, error) {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&o.Namespace, "clusters")
	def(&o.HostedCluster, "hc1")
	def(&o.NodePool, "np1")
	def(&o.InfraEnv, "infra1")
	def(&o.SecretName, "vsphere-credentials")
	def(&o.UpgradeType, UpgradeTypeReplace)
	if len(o.AgentLabels) == 0 {
		o.AgentLabels = map[string]string{"agent-forge.containeroo.ch/nodepool": o.NodePool}
	}
	s := &Scenario{
		Namespace:             o.Namespace,
		ControlPlaneNamespace: ControlPlaneNamespace(o.Namespace, o.HostedCluster),
		HostedCluster:         types.NamespacedName{Namespace: o.Namespace, Name: o.HostedCluster},
		NodePool:              types.NamespacedName{Namespace: o.Namespace, Name: o.NodePool},
		InfraEnv:              types.NamespacedName{Namespace: o.Namespace, Name: o.InfraEnv},
		AgentLabels:           o.AgentLabels,
	}
	for _, ns := range s.Namespaces() {
		if err := CreateNamespace(ctx, c, ns); err != nil {
			return nil, err
		}
	}
	if err := CreateHostedCluster(ctx, c, s.HostedCluster); err != nil {
		return nil, err
	}
	if err := CreateNodePool(ctx, c, s.NodePool, o.HostedCluster, o.AgentLabels, o.Replicas, o.UpgradeType); err != nil {
		return nil, err
	}
	if err := CreateInfraEnv(ctx, c, s.InfraEnv); err != nil {
		return nil, err
	}
	if o.ISOURL != "" {
		if err := SetInfraEnvImage(ctx, c, s.InfraEnv, o.ISOURL, time.Now()); err != nil {
			return nil, err
		}
	}
	if o.VCenter != nil {
		s.Secret = types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}
		if err := CreateCredentialsSecret(ctx, c, s.Secret, o.VCenter, true); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func create(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("world: creating %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// CreateNamespace creates a namespace if it does not exist.
func CreateNamespace(ctx context.Context, c client.Client, name string) error {
	return create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// releaseImage is the OpenShift release the scenario's HostedCluster and NodePools run.
const releaseImage = "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"

// CreateHostedCluster creates an Agent-platform HostedCluster whose Agents live in its namespace, shaped
// like the one `hcp create cluster agent` writes: the CRD (generated from HyperShift's types) requires
// release, pullSecret, networking, etcd, platform and at least four published services.
func CreateHostedCluster(ctx context.Context, c client.Client, key types.NamespacedName) error {
	hc := newObject(HostedClusterGVK)
	hc.SetNamespace(key.Namespace)
	hc.SetName(key.Name)
	spec := controlPlaneSpec(key.Namespace)
	spec["release"] = map[string]any{"image": releaseImage}
	spec["infraID"] = key.Name
	spec["controllerAvailabilityPolicy"] = "SingleReplica"
	hc.Object["spec"] = spec
	return create(ctx, c, hc)
}

// controlPlaneSpec is what a HostedCluster and its HostedControlPlane share (and their CRDs require):
// pull secret, SSH key, DNS, networking, etcd, the Agent platform and four published services.
func controlPlaneSpec(agentNamespace string) map[string]any {
	route := map[string]any{"type": "Route"}
	return map[string]any{
		"pullSecret": map[string]any{"name": "pull-secret"},
		"sshKey":     map[string]any{"name": "ssh-key"},
		"dns":        map[string]any{"baseDomain": "example.com"},
		"networking": map[string]any{
			"networkType":    "OVNKubernetes",
			"clusterNetwork": []any{map[string]any{"cidr": "10.132.0.0/14"}},
			"serviceNetwork": []any{map[string]any{"cidr": "172.31.0.0/16"}},
		},
		"etcd": map[string]any{
			"managementType": "Managed",
			"managed": map[string]any{"storage": map[string]any{
				"type": "PersistentVolume", "persistentVolume": map[string]any{"size": "8Gi"},
			}},
		},
		"platform": map[string]any{"type": "Agent", "agent": map[string]any{"agentNamespace": agentNamespace}},
		"services": []any{
			map[string]any{"service": "APIServer", "servicePublishingStrategy": map[string]any{"type": "LoadBalancer"}},
			map[string]any{"service": "OAuthServer", "servicePublishingStrategy": route},
			map[string]any{"service": "Konnectivity", "servicePublishingStrategy": route},
			map[string]any{"service": "Ignition", "servicePublishingStrategy": route},
		},
	}
}

// CreateNodePool creates an Agent-platform NodePool selecting Agents by agentLabels, with the given
// spec.management.upgradeType: HyperShift renders a MachineDeployment for Replace and a MachineSet for
// InPlace (spec.clusterName, management, release and platform are required by the CRD).
func CreateNodePool(ctx context.Context, c client.Client, key types.NamespacedName, hostedCluster string, agentLabels map[string]string, replicas int, upgradeType string) error {
	matchLabels := map[string]any{}
	for k, v := range agentLabels {
		matchLabels[k] = v
	}
	np := newObject(NodePoolGVK)
	np.SetNamespace(key.Namespace)
	np.SetName(key.Name)
	np.Object["spec"] = map[string]any{
		"clusterName": hostedCluster,
		"replicas":    int64(replicas),
		"management":  map[string]any{"upgradeType": upgradeType},
		"release":     map[string]any{"image": releaseImage},
		"platform": map[string]any{
			"type":  "Agent",
			"agent": map[string]any{"agentLabelSelector": map[string]any{"matchLabels": matchLabels}},
		},
	}
	return create(ctx, c, np)
}

// CreateInfraEnv creates a late-binding InfraEnv (no clusterRef) without image status.
func CreateInfraEnv(ctx context.Context, c client.Client, key types.NamespacedName) error {
	ie := newObject(InfraEnvGVK)
	ie.SetNamespace(key.Namespace)
	ie.SetName(key.Name)
	ie.Object["spec"] = map[string]any{
		"pullSecretRef":   map[string]any{"name": "pull-secret"},
		"cpuArchitecture": "x86_64",
	}
	return create(ctx, c, ie)
}

// SetInfraEnvImage plays assisted-service (re)generating the discovery image: status.isoDownloadURL,
// status.createdTime and ImageCreated=True. Call it again to simulate a regenerated image.
func SetInfraEnvImage(ctx context.Context, c client.Client, key types.NamespacedName, isoURL string, created time.Time) error {
	ie := newObject(InfraEnvGVK)
	if err := c.Get(ctx, key, ie); err != nil {
		return err
	}
	ts := created.UTC().Format(time.RFC3339)
	_ = unstructured.SetNestedField(ie.Object, isoURL, "status", "isoDownloadURL")
	_ = unstructured.SetNestedField(ie.Object, ts, "status", "createdTime")
	unstructuredcond.Replace(ie, []map[string]any{{
		"type": CondImageCreated, "status": "True", "reason": "ImageCreated",
		"message": "Image has been created", "lastTransitionTime": ts,
	}})
	return c.Status().Update(ctx, ie)
}

// SetInfraEnvImageError plays a failed image generation: the URL is cleared and ImageCreated=False.
func SetInfraEnvImageError(ctx context.Context, c client.Client, key types.NamespacedName, message string) error {
	ie := newObject(InfraEnvGVK)
	if err := c.Get(ctx, key, ie); err != nil {
		return err
	}
	unstructured.RemoveNestedField(ie.Object, "status", "isoDownloadURL")
	unstructuredcond.Replace(ie, []map[string]any{{
		"type": CondImageCreated, "status": "False", "reason": "ImageCreationError",
		"message": "Failed to create image: " + message, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}})
	return c.Status().Update(ctx, ie)
}

// CreateCredentialsSecret creates the pool's vSphere credentials Secret from a simulator URL:
// server = host:port, username and password from the URL's user info, insecure "true" when asked.
func CreateCredentialsSecret(ctx context.Context, c client.Client, key types.NamespacedName, vcenter *url.URL, insecure bool) error {
	data := map[string]string{"server": vcenter.Host}
	if vcenter.User != nil {
		pw, _ := vcenter.User.Password()
		data["username"], data["password"] = vcenter.User.Username(), pw
	}
	if insecure {
		data["insecure"] = "true"
	}
	return create(ctx, c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Type:       corev1.SecretTypeOpaque,
		StringData: data,
	})
}
