// Package iso caches an InfraEnv's discovery ISO on a vSphere datastore.
//
// The bytes are streamed from the ISO URL straight into a datastore upload under a temporary name,
// hashed (SHA-256) and checked for the ISO 9660 magic on the way, and moved to the content-addressed
// name "[isoDatastore] <prefix>/<sha256>.iso" only after the whole body was read and validated. Nothing
// is buffered in memory beyond a copy buffer and nothing touches the operator's disk.
//
// Layers, from pure to effectful:
//   - Decide: when a refresh is needed and whether it may be conditional (pure, table-tested).
//   - Cache.Refresh / Cache.Prune: one refresh or one retention pass against a vsphere.Client.
//   - Manager: runs at most one refresh+prune job per pool in the background, so a download never
//     blocks a reconcile worker or another pool, and reports completion through a callback.
//
// Trust and proxy: downloads trust the system roots plus Options.TrustedCABundleFile (the OpenShift
// injected trusted CA bundle, read again for every download so a changed ConfigMap needs no restart)
// plus a request's own CABundle, and go through HTTP_PROXY/HTTPS_PROXY unless NO_PROXY names the host,
// evaluated per request. Failures carry reasons the pool can show: CertificateUntrusted,
// InvalidCABundle, ProxyRefused, ProxyUnreachable (see ReasonOf). Every request has a deadline up to
// its headers (Options.HeaderTimeout) and an idle-read timeout after.
//
// Size: RefreshRequest.MaxSize (spec.iso.maxSize, default 8Gi) refuses a larger Content-Length before
// the body is read and cuts a body without a length off once it passes the limit, deleting its
// temporary upload: ISOTooLarge.
//
// The ISO URL carries a bearer token (in its query or path). It never leaves this package unredacted:
// status, events, logs, metrics and errors only see RedactURL's output and URLHash.
package iso
