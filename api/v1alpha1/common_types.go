package v1alpha1

// LocalObjectReference names a VsphereAgentPool in the VsphereAgent's namespace.
type LocalObjectReference struct {
	// Name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pool",xDescriptors="urn:alm:descriptor:io.kubernetes:agent-forge.containeroo.ch:v1alpha1:VsphereAgentPool"
	Name string `json:"name"`
}

// HostedClusterReference names a HyperShift HostedCluster in the pool's namespace. A type of its own so that the console offers a picker
// of that kind.
type HostedClusterReference struct {
	// Name of the HyperShift HostedCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="HostedCluster",xDescriptors="urn:alm:descriptor:io.kubernetes:hypershift.openshift.io:v1beta1:HostedCluster"
	Name string `json:"name"`
}

// NodePoolReference names a HyperShift NodePool in the pool's namespace. A type of its own so that the console offers a picker
// of that kind.
type NodePoolReference struct {
	// Name of the HyperShift NodePool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="NodePool",xDescriptors="urn:alm:descriptor:io.kubernetes:hypershift.openshift.io:v1beta1:NodePool"
	Name string `json:"name"`
}

// InfraEnvReference names a Assisted Installer InfraEnv in the pool's namespace. A type of its own so that the console offers a picker
// of that kind.
type InfraEnvReference struct {
	// Name of the Assisted Installer InfraEnv.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="InfraEnv",xDescriptors="urn:alm:descriptor:io.kubernetes:agent-install.openshift.io:v1beta1:InfraEnv"
	Name string `json:"name"`
}

// SecretReference names a Secret, optionally in another namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Name",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	Name string `json:"name"`
	// Namespace of the Secret. Defaults to the namespace of the VsphereAgentPool. Reading a Secret
	// outside the pool's namespace requires that namespace in the operator's --credentials-secret-namespaces.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Namespace",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Namespace string `json:"namespace,omitempty"`
}
