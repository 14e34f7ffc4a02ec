package validation

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// The AgentMachine fixture has two shapes (test/crds/README.md): the current provider's metav1.Condition
// list (cluster-api-provider-agent since 19c244c), installed by default, and the older CAPI v1beta1
// conditions with severity (test/crds/legacy-provider), installed with testenv.Options.LegacyAgentProvider.

// agentMachineWaiting is an AgentMachine as the current provider writes it while no Agent fits: empty
// messages, observedGeneration, no severity (facts §2: AgentReserved=False/NoSuitableAgents/"").
const agentMachineWaiting = `
apiVersion: capi-provider.agent-install.openshift.io/v1beta1
kind: AgentMachine
metadata: {namespace: default}
spec:
  agentLabelSelector: {matchLabels: {example.com/pool: demo-workers}}
status:
  ready: false
  conditions:
  - {type: Ready, status: "False", reason: IssuesReported, message: "* AgentReserved: NoSuitableAgents", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: AgentReserved, status: "False", reason: NoSuitableAgents, message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: AgentSpecSynced, status: "False", reason: AgentNotYetFound, message: Agent not yet reserved, observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
`

// writeAgentMachineStatus creates the AgentMachine through c and writes its status (strict field
// validation), returning the status write's error.
func writeAgentMachineStatus(t *testing.T, c client.Client, obj *unstructured.Unstructured) error {
	t.Helper()
	status := obj.Object["status"]
	delete(obj.Object, "status")
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create AgentMachine: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, obj) })
	obj.Object["status"] = status
	return client.WithFieldValidation(c, "Strict").Status().Update(ctx, obj)
}

// The current fixture stores the conditions the current provider writes, empty messages and
// observedGeneration included, and refuses what metav1.Condition refuses.
func TestAgentMachineCurrentConditionsAcceptEmptyMessage(t *testing.T) {
	am := objectFromYAML(t, agentMachineWaiting)
	am.SetName(uniqueName("am-current"))
	want := unstructuredcond.Entries(am)
	if err := writeAgentMachineStatus(t, k8s, am); err != nil {
		t.Fatalf("the current provider's conditions (message \"\", observedGeneration) refused: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(am.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(am), got); err != nil {
		t.Fatal(err)
	}
	conds := unstructuredcond.Entries(got)
	if len(conds) != len(want) {
		t.Fatalf("stored %d conditions, wrote %d", len(conds), len(want))
	}
	reserved := conds[1]
	if msg, ok := reserved["message"]; !ok || msg != "" {
		t.Fatalf("AgentReserved message stored as %#v (present: %t), want \"\"", msg, ok)
	}
	if gen := reserved["observedGeneration"]; gen != int64(1) {
		t.Fatalf("observedGeneration stored as %#v, want 1", gen)
	}

	for _, tc := range []struct {
		name, field string
		edit        func(c map[string]any)
	}{
		{"message missing", "message", func(c map[string]any) { delete(c, "message") }},
		{"reason empty", "reason", func(c map[string]any) { c["reason"] = "" }},
		{"reason not CamelCase", "reason", func(c map[string]any) { c["reason"] = "no suitable agents" }},
		{"status outside the enum", "status", func(c map[string]any) { c["status"] = "Maybe" }},
		{"negative observedGeneration", "observedGeneration", func(c map[string]any) { c["observedGeneration"] = int64(-1) }},
		{"message too long", "message", func(c map[string]any) { c["message"] = strings.Repeat("x", 32769) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := objectFromYAML(t, agentMachineWaiting)
			bad.SetName(uniqueName("am-current"))
			unstructuredcond.Edit(bad, func(conds []map[string]any) { tc.edit(conds[1]) })
			assertRefused(t, writeAgentMachineStatus(t, k8s, bad), "status.conditions[1]."+tc.field)
		})
	}
	t.Run("severity is not a field", func(t *testing.T) {
		bad := objectFromYAML(t, agentMachineWaiting)
		bad.SetName(uniqueName("am-current"))
		unstructuredcond.Edit(bad, func(conds []map[string]any) { conds[1]["severity"] = "Warning" })
		assertUnknownField(t, writeAgentMachineStatus(t, k8s, bad), "status.conditions[1].severity")
	})
}

// With LegacyAgentProvider the older providers' AgentMachine CRD is served instead: its CAPI v1beta1
// conditions refuse an empty message (and know no observedGeneration) and take severity.
func TestAgentMachineLegacyConditionsRefuseEmptyMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second API server")
	}
	env, err := testenv.Start(testenv.Options{LegacyAgentProvider: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the legacy envtest: %v", err)
		}
	})
	legacy, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	older := objectFromYAML(t, `
apiVersion: capi-provider.agent-install.openshift.io/v1beta1
kind: AgentMachine
metadata: {namespace: default}
status:
  ready: false
  conditions:
  - {type: Ready, status: "False", severity: Warning, reason: NoSuitableAgents, lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: AgentReserved, status: "False", severity: Warning, reason: NoSuitableAgents, message: no suitable agents, lastTransitionTime: "2026-01-01T00:00:00Z"}
`)
	older.SetName(uniqueName("am-legacy"))
	if err := writeAgentMachineStatus(t, legacy, older); err != nil {
		t.Fatalf("the older provider's conditions (severity, no message) refused by the legacy CRD: %v", err)
	}

	empty := objectFromYAML(t, agentMachineWaiting)
	empty.SetName(uniqueName("am-legacy"))
	unstructuredcond.Edit(empty, func(conds []map[string]any) {
		for _, c := range conds {
			delete(c, "observedGeneration")
		}
	})
	err = writeAgentMachineStatus(t, legacy, empty)
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.conditions[1].message") {
		t.Fatalf("want the legacy CRD to refuse the empty message of status.conditions[1], got %v", err)
	}

	withGen := objectFromYAML(t, agentMachineWaiting)
	withGen.SetName(uniqueName("am-legacy"))
	unstructuredcond.Edit(withGen, func(conds []map[string]any) { conds[1]["message"] = "no suitable agents" })
	assertUnknownField(t, writeAgentMachineStatus(t, legacy, withGen), "status.conditions[0].observedGeneration")
}
