//go:build tools

// This file only pins, in go.mod, the API packages crdgen runs controller-gen over; it is never compiled
// (crdgen itself only reads the packages' sources through controller-gen and go/parser).
package main

import (
	_ "github.com/openshift/hypershift/api/hypershift/v1beta1"
	_ "sigs.k8s.io/cluster-api/api/core/v1beta1"
	_ "sigs.k8s.io/cluster-api/api/core/v1beta2"
	_ "sigs.k8s.io/cluster-api/api/ipam/v1alpha1"
	_ "sigs.k8s.io/cluster-api/api/ipam/v1beta1"
	_ "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
)
