package capicore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

func TestBinaryTakesThePrebuiltOneFromTheEnvironment(t *testing.T) {
	want := filepath.Join(t.TempDir(), "capi-core")
	t.Setenv(BinaryEnv, want)
	got, err := Binary(context.Background())
	if err != nil {
		t.Fatalf("Binary: %v", err)
	}
	if got != want {
		t.Fatalf("Binary = %q, want $%s = %q", got, BinaryEnv, want)
	}
}

func TestKubeconfigKeepsTheCredentials(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(name), 0o600))
		return p
	}
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
	}{
		{"client certificate (envtest's admin)", &rest.Config{Host: "https://127.0.0.1:6443",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}}},
		{"bearer token", &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "token",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}},
		{"files", &rest.Config{Host: "127.0.0.1:6443", BearerTokenFile: file("token"),
			TLSClientConfig: rest.TLSClientConfig{CAFile: file("ca.crt"), CertFile: file("tls.crt"), KeyFile: file("tls.key")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Kubeconfig(tc.cfg)
			if err != nil {
				t.Fatalf("Kubeconfig: %v", err)
			}
			got, err := clientcmd.RESTConfigFromKubeConfig(data)
			if err != nil {
				t.Fatalf("reading the kubeconfig back: %v\n%s", err, data)
			}
			wantHost := tc.cfg.Host
			if !strings.Contains(wantHost, "://") {
				wantHost = "https://" + wantHost
			}
			wantToken := tc.cfg.BearerToken
			if tc.cfg.BearerTokenFile != "" { // the loader reads the file
				b, err := os.ReadFile(tc.cfg.BearerTokenFile)
				must(t, err)
				wantToken = string(b)
			}
			if got.Host != wantHost || !bytes.Equal(got.CAData, tc.cfg.CAData) || got.CAFile != tc.cfg.CAFile ||
				!bytes.Equal(got.CertData, tc.cfg.CertData) || !bytes.Equal(got.KeyData, tc.cfg.KeyData) ||
				got.CertFile != tc.cfg.CertFile || got.KeyFile != tc.cfg.KeyFile ||
				got.BearerToken != wantToken || got.BearerTokenFile != tc.cfg.BearerTokenFile {
				t.Fatalf("read back %+v\nfrom %+v", got, tc.cfg)
			}
		})
	}
	if _, err := Kubeconfig(&rest.Config{}); err == nil {
		t.Fatal("Kubeconfig without a host: no error")
	}
}

const (
	clusterAPI = "cluster.x-k8s.io/v1beta2"
	agentAPI   = "capi-provider.agent-install.openshift.io/v1beta1"
	hcpAPI     = "hypershift.openshift.io/v1beta1"

	clusterNameLabel  = "cluster.x-k8s.io/cluster-name"
	deleteMachine     = "cluster.x-k8s.io/delete-machine"
	preTerminateHook  = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/agentmachine"
	providerFinalizer = "agentmachine.agent-install.openshift.io/deprovision"
)

// TestCAPICoreScalesAMachineDeploymentOfAgentMachines runs the real CAPI v1.14.2 core controllers against
// envtest with the objects HyperShift creates for an Agent NodePool, and checks the Machine lifecycle the
// operator and the world rely on: scale-up through a MachineSet, AgentMachine adoption, the
// delete-machine annotation choosing the Machine a scale-down removes, and the pre-terminate hook holding
// a deletion until it is removed.
func TestCAPICoreScalesAMachineDeploymentOfAgentMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts envtest and the capi-core process (a cold build of it takes ~10 min)")
	}
	began := time.Now()
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancelBuild()
	if _, err := Binary(buildCtx); err != nil { // fails, never skips: the test is the proof that it builds
		t.Fatalf("capi-core binary: %v", err)
	}
	t.Logf("capi-core binary ready after %s", time.Since(began).Round(time.Millisecond))

	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)

	logPath := filepath.Join(t.TempDir(), "capi-core.log")
	started := time.Now()
	proc, err := Start(ctx, env.Config, Options{LogPath: logPath})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("capi-core pid %d ready in %s", proc.PID(), time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := proc.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 48<<10 {
					b = b[len(b)-48<<10:]
				}
				t.Logf("capi-core log (tail):\n%s", b)
			}
		}
	})

	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		ns      = "clusters-hc1" // HyperShift's control-plane namespace: <HostedCluster namespace>-<name>
		cluster = "hc1-infra"    // HyperShift names the CAPI Cluster after the HostedCluster's infraID
		md      = "hc1-np1"
		tmpl    = "hc1-np1-5f7c8d9b"
		dataSec = "user-data-np1-5f7c8d9b"
	)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	// The workload cluster's kubeconfig: the ClusterCache reads it through a cache that holds only
	// Secrets labelled with the cluster name.
	kc, err := Kubeconfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-kubeconfig", Labels: map[string]string{clusterNameLabel: cluster}},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": kc},
	}))
	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dataSec},
		Data: map[string][]byte{"value": []byte(`{"ignition":{"version":"3.2.0"}}`)}}))

	endpoint := map[string]any{"host": "api.hc1.example.com", "port": int64(6443)}
	hcp := newObj(hcpAPI, "HostedControlPlane", ns, "hc1", map[string]any{
		"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64",
		"pullSecret":   map[string]any{"name": "pull-secret"},
		"sshKey":       map[string]any{"name": "ssh-key"},
		"issuerURL":    "https://kubernetes.default.svc",
		"infraID":      cluster,
		"platform":     map[string]any{"type": "Agent", "agent": map[string]any{"agentNamespace": ns}},
		"dns":          map[string]any{"baseDomain": "example.com"},
		"etcd":         map[string]any{"managementType": "Managed", "managed": map[string]any{"storage": map[string]any{"type": "PersistentVolume"}}},
		"services": []any{
			service("APIServer", "LoadBalancer"), service("OAuthServer", "Route"),
			service("Konnectivity", "Route"), service("Ignition", "Route"),
		},
	})
	must(t, c.Create(ctx, hcp))
	hcp.Object["status"] = map[string]any{"ready": true, "initialized": true, "externalManagedControlPlane": true,
		"controlPlaneEndpoint": endpoint}
	must(t, c.Status().Update(ctx, hcp))

	agentCluster := newObj(agentAPI, "AgentCluster", ns, cluster, map[string]any{"controlPlaneEndpoint": endpoint})
	must(t, c.Create(ctx, agentCluster))
	agentCluster.Object["status"] = map[string]any{"ready": true,
		"clusterDeploymentReference": map[string]any{"name": cluster, "namespace": ns}}
	must(t, c.Status().Update(ctx, agentCluster))

	must(t, c.Create(ctx, newObj(clusterAPI, "Cluster", ns, cluster, map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": "capi-provider.agent-install.openshift.io", "kind": "AgentCluster", "name": cluster},
		"controlPlaneRef":   map[string]any{"apiGroup": "hypershift.openshift.io", "kind": "HostedControlPlane", "name": "hc1"},
	})))
	must(t, c.Create(ctx, newObj(agentAPI, "AgentMachineTemplate", ns, tmpl, map[string]any{
		"template": map[string]any{"spec": map[string]any{
			"agentLabelSelector": map[string]any{"matchLabels": map[string]any{"agentforge.containeroo.ch/pool": "np1"}}}},
	})))

	// Everything CAPI's MachineDeployment and Machine webhooks would default (none run here).
	labels := map[string]any{clusterNameLabel: cluster, "cluster.x-k8s.io/deployment-name": md}
	mdObj := newObj(clusterAPI, "MachineDeployment", ns, md, map[string]any{
		"clusterName": cluster,
		"replicas":    int64(3),
		"selector":    map[string]any{"matchLabels": labels},
		"rollout": map[string]any{"strategy": map[string]any{"type": "RollingUpdate",
			"rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)}}},
		"deletion": map[string]any{"order": "Random"},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"clusterName":       cluster,
				"bootstrap":         map[string]any{"dataSecretName": dataSec},
				"infrastructureRef": map[string]any{"apiGroup": "capi-provider.agent-install.openshift.io", "kind": "AgentMachineTemplate", "name": tmpl},
				"deletion":          map[string]any{"nodeDeletionTimeoutSeconds": int64(10)},
			},
		},
	})
	mdObj.SetLabels(map[string]string{clusterNameLabel: cluster})
	must(t, c.Create(ctx, mdObj))

	// The Cluster controller derives the Cluster's status from the AgentCluster and the HostedControlPlane.
	eventually(t, ctx, "Cluster initialized from AgentCluster status.ready and HostedControlPlane status.initialized", func() (bool, string) {
		cl := get(t, ctx, c, clusterAPI, "Cluster", ns, cluster)
		infra, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "infrastructureProvisioned")
		cp, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "controlPlaneInitialized")
		host, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneEndpoint", "host")
		cond := unstructuredcond.Raw(cl, "ControlPlaneInitialized")
		return infra && cp && host == "api.hc1.example.com" && cond["status"] == "True",
			fmt.Sprintf("infrastructureProvisioned=%v controlPlaneInitialized=%v endpoint=%q ControlPlaneInitialized=%v", infra, cp, host, cond)
	})

	// Scale-up: one MachineSet, three Machines, three AgentMachines adopted by their Machines.
	var machines []*unstructured.Unstructured
	eventually(t, ctx, "3 Machines, each with its adopted AgentMachine", func() (bool, string) {
		sets := list(t, ctx, c, clusterAPI, "MachineSet", ns)
		machines = list(t, ctx, c, clusterAPI, "Machine", ns)
		ams := list(t, ctx, c, agentAPI, "AgentMachine", ns)
		if len(sets) != 1 || len(machines) != 3 || len(ams) != 3 {
			return false, fmt.Sprintf("%d MachineSets, %d Machines, %d AgentMachines", len(sets), len(machines), len(ams))
		}
		for _, m := range machines {
			am := byName(ams, infraRefName(m))
			if am == nil {
				return false, fmt.Sprintf("Machine %s: no AgentMachine %q", m.GetName(), infraRefName(m))
			}
			ref := metav1.GetControllerOf(am)
			if ref == nil || ref.Kind != "Machine" || ref.Name != m.GetName() || ref.APIVersion != clusterAPI || ref.UID != m.GetUID() {
				return false, fmt.Sprintf("AgentMachine %s controller ref %+v", am.GetName(), ref)
			}
			if am.GetLabels()[clusterNameLabel] != cluster {
				return false, fmt.Sprintf("AgentMachine %s labels %v", am.GetName(), am.GetLabels())
			}
			if own := metav1.GetControllerOf(m); own == nil || own.Kind != "MachineSet" || own.Name != sets[0].GetName() {
				return false, fmt.Sprintf("Machine %s controller ref %+v", m.GetName(), own)
			}
			if !slices.Contains(m.GetFinalizers(), "machine.cluster.x-k8s.io") {
				return false, fmt.Sprintf("Machine %s finalizers %v", m.GetName(), m.GetFinalizers())
			}
		}
		return true, ""
	})
	sort.Slice(machines, func(i, j int) bool { return machines[i].GetName() < machines[j].GetName() })
	// Name order is the tie-break among equally unhealthy Machines (none has a Node): annotating the last
	// one proves the annotation, not the order, picks it.
	doomed, hooked, kept := machines[2], machines[1], machines[0]
	t.Logf("Machines: %s (delete-machine), %s (pre-terminate hook), %s (stays)", doomed.GetName(), hooked.GetName(), kept.GetName())

	// Scale-down 3 -> 2 removes the Machine annotated delete-machine, and its AgentMachine.
	annotate(t, ctx, c, doomed, map[string]any{deleteMachine: ""})
	// The provider's deletion hook (AMC) and finalizer on the next Machine to go, set before any scale-down.
	annotate(t, ctx, c, hooked, map[string]any{preTerminateHook: ""})
	hookedAM := get(t, ctx, c, agentAPI, "AgentMachine", ns, infraRefName(hooked))
	must(t, c.Patch(ctx, hookedAM, client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, providerFinalizer)))))
	scale(t, ctx, c, ns, md, 2)
	eventually(t, ctx, "the delete-machine Machine and its AgentMachine gone, the others kept", func() (bool, string) {
		ms := list(t, ctx, c, clusterAPI, "Machine", ns)
		ams := list(t, ctx, c, agentAPI, "AgentMachine", ns)
		return names(ms) == names([]*unstructured.Unstructured{kept, hooked}) && len(ams) == 2 && byName(ams, infraRefName(doomed)) == nil,
			fmt.Sprintf("Machines %s, AgentMachines %s", names(ms), names(ams))
	})

	// Scale-down 2 -> 1 of the hooked Machine: it waits for its pre-terminate hook, its AgentMachine stays.
	annotate(t, ctx, c, hooked, map[string]any{deleteMachine: ""})
	scale(t, ctx, c, ns, md, 1)
	eventually(t, ctx, "the hooked Machine deleting, Deleting=True/WaitingForPreTerminateHook", func() (bool, string) {
		m := get(t, ctx, c, clusterAPI, "Machine", ns, hooked.GetName())
		cond := unstructuredcond.Raw(m, "Deleting")
		return m.GetDeletionTimestamp() != nil && cond["status"] == "True" && cond["reason"] == "WaitingForPreTerminateHook",
			fmt.Sprintf("deletionTimestamp=%v Deleting=%v", m.GetDeletionTimestamp(), cond)
	})
	// Held, not just slow: CAPI does not requeue a hook wait, so a while later nothing has moved.
	time.Sleep(3 * time.Second)
	m := get(t, ctx, c, clusterAPI, "Machine", ns, hooked.GetName())
	if cond := unstructuredcond.Raw(m, "Deleting"); cond["reason"] != "WaitingForPreTerminateHook" {
		t.Fatalf("hooked Machine left the hook wait: Deleting=%v", cond)
	}
	if msg, _ := unstructuredcond.Raw(m, "Deleting")["message"].(string); !strings.Contains(msg, preTerminateHook) {
		t.Errorf("Deleting message %q does not name the hook", msg)
	}
	am := get(t, ctx, c, agentAPI, "AgentMachine", ns, infraRefName(hooked))
	if am.GetDeletionTimestamp() != nil {
		t.Fatalf("AgentMachine %s deleted while its Machine's pre-terminate hook is on", am.GetName())
	}
	if _, ok, _ := unstructured.NestedString(m.Object, "status", "deletion", "waitForPreTerminateHookStartTime"); !ok {
		t.Errorf("status.deletion.waitForPreTerminateHookStartTime unset")
	}

	// The provider releases the hook: CAPI deletes the AgentMachine and waits for it (the test plays the
	// provider's finalizer removal), then the Machine goes.
	unannotate(t, ctx, c, m, preTerminateHook)
	eventually(t, ctx, "the AgentMachine deleting, the Machine waiting for it", func() (bool, string) {
		am := get(t, ctx, c, agentAPI, "AgentMachine", ns, infraRefName(hooked))
		cond := unstructuredcond.Raw(get(t, ctx, c, clusterAPI, "Machine", ns, hooked.GetName()), "Deleting")
		return am.GetDeletionTimestamp() != nil && cond["reason"] == "WaitingForInfrastructureDeletion",
			fmt.Sprintf("AgentMachine deletionTimestamp=%v, Machine Deleting=%v", am.GetDeletionTimestamp(), cond)
	})
	am = get(t, ctx, c, agentAPI, "AgentMachine", ns, infraRefName(hooked))
	must(t, c.Patch(ctx, am, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
	eventually(t, ctx, "the hooked Machine and its AgentMachine gone, one Machine left", func() (bool, string) {
		ms := list(t, ctx, c, clusterAPI, "Machine", ns)
		ams := list(t, ctx, c, agentAPI, "AgentMachine", ns)
		return names(ms) == kept.GetName() && len(ams) == 1 && ams[0].GetName() == infraRefName(kept),
			fmt.Sprintf("Machines %s, AgentMachines %s", names(ms), names(ams))
	})

	// The Node path, through the ClusterCache (the workload cluster is this API server): the provider
	// sets the AgentMachine's providerID and status.ready, the host joins as a Node with that providerID.
	// CAPI copies the providerID, finds the Node by it, sets nodeRef and the Running phase, and annotates
	// the Node with its Machine.
	const providerID = "agent://2c6f5b7e-1d3a-4c8e-9f0b-7a1e2d3c4b5a"
	keptAM := get(t, ctx, c, agentAPI, "AgentMachine", ns, infraRefName(kept))
	must(t, c.Patch(ctx, keptAM, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"providerID":%q}}`, providerID)))))
	must(t, c.Status().Patch(ctx, keptAM, client.RawPatch(types.MergePatchType, []byte(
		`{"status":{"ready":true,"addresses":[{"type":"InternalIP","address":"192.0.2.10"}]}}`))))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	must(t, c.Create(ctx, node))
	// NodeHealthy=True needs Ready=True and the three pressure conditions reported False, as a kubelet does.
	for typ, status := range map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue,
		corev1.NodeMemoryPressure: corev1.ConditionFalse, corev1.NodeDiskPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionFalse} {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: typ, Status: status, Reason: "Kubelet" + string(typ),
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	}
	must(t, c.Status().Update(ctx, node))
	eventually(t, ctx, "the kept Machine Running on its Node", func() (bool, string) {
		m := get(t, ctx, c, clusterAPI, "Machine", ns, kept.GetName())
		nodeRef, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		pid, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		infra, _, _ := unstructured.NestedBool(m.Object, "status", "initialization", "infrastructureProvisioned")
		healthy := unstructuredcond.Raw(m, "NodeHealthy")
		n := &corev1.Node{}
		must(t, c.Get(ctx, client.ObjectKey{Name: "worker-0"}, n))
		return nodeRef == "worker-0" && phase == "Running" && pid == providerID && infra && healthy["status"] == "True" &&
				n.Annotations["cluster.x-k8s.io/machine"] == kept.GetName(),
			fmt.Sprintf("nodeRef=%q phase=%q providerID=%q infrastructureProvisioned=%v NodeHealthy=%v Node annotations=%v",
				nodeRef, phase, pid, infra, healthy, n.Annotations)
	})

	// Scale to 0: the HostedControlPlane's status.externalManagedControlPlane allows Node deletion without
	// control-plane Machines, so CAPI drains (cordons) the Node, deletes the AgentMachine, then the Node.
	scale(t, ctx, c, ns, md, 0)
	eventually(t, ctx, "the last Machine, its AgentMachine and its Node gone", func() (bool, string) {
		ms := list(t, ctx, c, clusterAPI, "Machine", ns)
		ams := list(t, ctx, c, agentAPI, "AgentMachine", ns)
		n := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: "worker-0"}, n)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return len(ms) == 0 && len(ams) == 0 && apierrors.IsNotFound(err),
			fmt.Sprintf("Machines %q, AgentMachines %q, Node: %v (unschedulable %v)", names(ms), names(ams), err, n.Spec.Unschedulable)
	})

	// A second process whose parent "dies": closing its stdin ends it (cleanly), without a signal.
	orphan, err := Start(ctx, env.Config, Options{Namespace: "elsewhere", Concurrency: 1})
	if err != nil {
		t.Fatalf("Start (namespaced, 1 worker): %v", err)
	}
	_ = orphan.stdin.Close()
	select {
	case <-orphan.exited:
		if orphan.waitErr != nil {
			t.Errorf("capi-core after stdin EOF: %v", orphan.waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("capi-core (pid %d) still running 30 s after its stdin closed", orphan.PID())
	}
	if err := orphan.Stop(); err == nil {
		t.Errorf("Stop of a process that had exited on its own: no error")
	}
	t.Logf("whole test %s", time.Since(began).Round(time.Millisecond))
}

func service(name, publishing string) map[string]any {
	return map[string]any{"service": name, "servicePublishingStrategy": map[string]any{"type": publishing}}
}

func newObj(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func get(t *testing.T, ctx context.Context, c client.Client, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := newObj(apiVersion, kind, ns, name, nil)
	delete(u.Object, "spec")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			t.Fatalf("%s %s/%s is gone", kind, ns, name)
		}
		t.Fatalf("get %s %s/%s: %v", kind, ns, name, err)
	}
	return u
}

func list(t *testing.T, ctx context.Context, c client.Client, apiVersion, kind, ns string) []*unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiVersion)
	l.SetKind(kind + "List")
	if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
		t.Fatalf("list %s: %v", kind, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func names(objs []*unstructured.Unstructured) string {
	var n []string
	for _, o := range objs {
		n = append(n, o.GetName())
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

func byName(objs []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

func infraRefName(machine *unstructured.Unstructured) string {
	n, _, _ := unstructured.NestedString(machine.Object, "spec", "infrastructureRef", "name")
	return n
}

func annotate(t *testing.T, ctx context.Context, c client.Client, u *unstructured.Unstructured, annotations map[string]any) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	must(t, c.Patch(ctx, u.DeepCopy(), client.RawPatch(types.MergePatchType, mustJSON(t, patch))))
}

func unannotate(t *testing.T, ctx context.Context, c client.Client, u *unstructured.Unstructured, key string) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: nil}}}
	must(t, c.Patch(ctx, u.DeepCopy(), client.RawPatch(types.MergePatchType, mustJSON(t, patch))))
}

func scale(t *testing.T, ctx context.Context, c client.Client, ns, name string, replicas int64) {
	t.Helper()
	md := newObj(clusterAPI, "MachineDeployment", ns, name, nil)
	must(t, c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond every 250 ms until it holds, failing the test with cond's last description after
// a minute (CAPI reacts to each of these changes within seconds; the bound is for a loaded CI machine).
func eventually(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	start := time.Now()
	for {
		ok, desc := cond()
		if ok {
			t.Logf("%s: after %s", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %s: %s", what, time.Since(start).Round(time.Millisecond), desc)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
