// Package preflight owns the checks a pool passes before it creates any VsphereAgent: the spec values
// it cannot honour as written (SpecHonoured), the NodePool's agentLabelSelector against the labels the
// pool's Agents get, the placement named in spec.vsphere (every failure domain) resolving in vCenter,
// and the credentials' vCenter privileges on it. One Checker runs them (Run) and returns one Result:
// the reason that blocks creation and when to look again. Verdicts are kept per pool UID and
// generation and rechecked every 10 minutes.
package preflight
