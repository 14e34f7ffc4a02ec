// Package metrics holds the operator's Prometheus metrics. Every name starts with agent_forge_, and
// label values never carry secrets or URL tokens. The package registers nothing by itself: the
// manager calls Register with controller-runtime's registry, so its secure metrics endpoint serves
// them, while the domain packages (vsphere, iso) stay free of controller-runtime.
package metrics
