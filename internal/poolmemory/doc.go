// Package poolmemory is what the manager process remembers beyond the API server: the Registry of
// every per-pool record, whose one Forget drops all a deleted pool left behind, and the records both
// controllers hand each other (VMs destroyed before their Agent appeared, VsphereAgents created here
// whose VM was not tried yet) or each keep for itself (its own last writes while the cache lags). None
// of it survives a restart, and none of it may be needed to be correct: it saves API and vSphere
// calls and closes windows a lagging cache opens. It exists so that "what does the process remember
// of a pool, and when does it forget it" has one answer (see Registry).
package poolmemory
