// Package metrics holds the operator's Prometheus metrics, registered with controller-runtime's
// registry so the manager's secure metrics endpoint serves them. Every name starts with agent_forge_.
// Label values never carry secrets or URL tokens.
package metrics
