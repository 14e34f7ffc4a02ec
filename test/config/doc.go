// Package config checks the deployment manifests as shipped: the kustomize input in config/, its
// rendered form, and the OLM bundle agree on how the manager gets the cluster's trusted CA bundle.
package config
