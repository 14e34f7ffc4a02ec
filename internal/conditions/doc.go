// Package conditions holds the helpers every pass uses on metav1.Conditions and on the status it is
// about to write: set a condition (its message redacted), find one, stamp transition times from the
// injected clock, and compare a status with the stored one as the API server keeps it. It exists so
// that the pool, VsphereAgent, preflight, lease and ejection code write conditions one way.
package conditions
