// Package ejection owns the ejection of the discovery ISO from a VsphereAgent's VM once its Agent is
// installed (SPEC §6): the Ejector takes one crash-safe step per VsphereAgent pass (record first, then
// reconfigure, answer a CD-ROM lock question only once it is recorded, clear the record), finishes or
// closes a recorded ejection when the VsphereAgent is deleted, and sums the pool's ejections; the Guard
// refuses ejections while the served VsphereAgent CRD would prune the recovery record. The VsphereAgent
// controller calls it; the pool shows its Summary and the Guard's verdict.
package ejection
