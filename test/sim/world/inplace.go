package world

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UpgradeTypeInPlace is the NodePool's spec.management.upgradeType for which HyperShift renders a
// MachineSet instead of a MachineDeployment (UpgradeTypeReplace): the in-place upgrader updates the
// existing Machines, so there is no rollout for a MachineDeployment to drive.
const (
	UpgradeTypeInPlace = "InPlace"
	UpgradeTypeReplace = "Replace"
)

// AnnotationInPlaceMaxUnavailable is the annotation HyperShift sets on an InPlace NodePool's MachineSet
// for its in-place upgrader (spec.management.inPlace.maxUnavailable, 1 by default).
const AnnotationInPlaceMaxUnavailable = "hypershift.openshift.io/nodePoolMaxUnavailable"

// MachineSetOf names the MachineSet HyperShift renders for an InPlace NodePool: the NodePool's name, in
// the control-plane namespace (hypershift-operator/controllers/nodepool/capi.go, machineSet()).
func MachineSetOf(s *Scenario) types.NamespacedName {
	return types.NamespacedName{Namespace: s.ControlPlaneNamespace, Name: s.NodePool.Name}
}

// inPlaceSelectorLabel is the label HyperShift's reconcileMachineSet selects the MachineSet's Machines by:
// key and value both "<infraID>-<clusterName>-<nodePool>", shortened to 43 characters with a hash when
// longer (generateName/getName in capi.go).
func inPlaceSelectorLabel(infraID, clusterName, nodePool string) string {
	const maxLength = 43
	name := infraID + "-" + clusterName + "-" + nodePool
	if len(name) <= maxLength {
		return name
	}
	hash := specHash(name)
	if keep := maxLength - len(hash) - 2 - len(nodePool); keep > 0 {
		return name[:keep] + "-" + hash + "-" + nodePool
	}
	return name[:maxLength-len(hash)-1] + "-" + hash
}

// ensureMachineSet creates an InPlace NodePool's MachineSet as HyperShift's reconcileMachineSet shapes it
// (cluster-name label, the NodePool and maxUnavailable annotations, the selector label on the selector
// and the template, the NodePool annotation on the template so CAPI copies it to Machines), with the
// fields CAPI's MachineSet webhook defaults (the cluster-name label in the selector, deletion order
// Random), and keeps its replicas and template current. HyperShift writes the replicas only without
// autoscaling; with autoscaling the autoscaler scales the MachineSet, here SetReplicas plays both.
func (d *Driver) ensureMachineSet(ctx context.Context, np *unstructured.Unstructured, cpNS, infraID, templateName, secretName string, replicas int64, scale bool) error {
	ms, err := d.renderedFor(ctx, MachineSetGVK, cpNS, np)
	if err != nil {
		return err
	}
	clusterName, _, _ := unstructured.NestedString(np.Object, "spec", "clusterName")
	selectorLabel := inPlaceSelectorLabel(infraID, clusterName, np.GetName())
	template := machineTemplate(np, infraID, templateName, secretName, selectorLabel, selectorLabel)
	if ms == nil {
		ms = newObject(MachineSetGVK)
		ms.SetNamespace(cpNS)
		ms.SetName(np.GetName())
		ms.SetLabels(map[string]string{LabelClusterName: infraID})
		ms.SetAnnotations(map[string]string{AnnotationNodePool: nodePoolKey(np), AnnotationInPlaceMaxUnavailable: "1"})
		want := replicas
		if !scale {
			want = 0
		}
		ms.Object["spec"] = map[string]any{
			"clusterName": infraID,
			"replicas":    want,
			"selector":    map[string]any{"matchLabels": map[string]any{selectorLabel: selectorLabel, LabelClusterName: infraID}},
			"deletion":    map[string]any{"order": "Random"},
			"template":    template,
		}
		if err := d.createIfAbsent(ctx, ms); err != nil {
			return err
		}
		d.log.Info("machineset created", "machineSet", client.ObjectKeyFromObject(ms), "replicas", want)
		return nil
	}
	return d.keepRendered(ctx, ms, template, templateName, replicas, scale)
}
