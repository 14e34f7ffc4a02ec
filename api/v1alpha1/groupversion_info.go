// Package v1alpha1 contains API Schema definitions for the agent-forge.containeroo.ch v1alpha1 API group.
// +kubebuilder:object:generate=true
// +groupName=agent-forge.containeroo.ch
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "agent-forge.containeroo.ch", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers this group-version's kinds, as controller-runtime's deprecated scheme.Builder
// did (which keeps api/ free of a controller-runtime dependency).
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&VsphereAgentPool{}, &VsphereAgentPoolList{},
		&VsphereAgent{}, &VsphereAgentList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
