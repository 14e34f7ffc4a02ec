// Package staticip owns the static-IP leases of pools with spec.network: an IPAddressClaim per lease
// (owned by the pool, with a MAC of its own) and the NMStateConfig that puts its address into the
// InfraEnv's discovery image. The pool keeps spare leases ready and releases them in batches
// (Leases.Observe, Prepare, SetStatus, ReleaseAll); a VsphereAgent holds one before its VM is created
// and settles it when its VM is destroyed or kept (Leases.Hold, Settle).
package staticip
