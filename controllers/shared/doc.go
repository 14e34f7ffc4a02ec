// Package shared holds what every controller of the operator uses and no controller owns: the
// controllers' Options (with their defaults and the crash-point seam), condition reasons and helpers,
// the refusal-Event limiter and the redaction of texts that reach Events and conditions, the cache's
// field indexes, the fresh (uncached) reads that guard every release, the own-writes memory that lets a
// pass read its last write while the cache lags, the mapping of vSphere and credentials errors to
// condition reasons, finalizer patches and small unstructured helpers. It imports no controller package.
package shared
