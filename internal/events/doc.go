// Package events is how the operator's Events reach the API server: the Recorder every Event crosses
// (notes redacted and cut to the events.k8s.io/v1 limit, actions as named constants), the Batcher that
// gathers routine per-VM outcomes into one Event per pool and batch (as a ReplicaSet records one
// SuccessfulCreate for its Pods: a scale-up of n VMs costs one Event write per pool and reason, not n,
// and a batch longer than a note's 1 kB is split into several Events, each naming its share of the
// VMs), and the EventLimiter that announces a lasting refusal once, then at most every ten minutes.
// It exists so that no call site writes an Event by another road: redaction, size and rate are
// decided here once.
package events
