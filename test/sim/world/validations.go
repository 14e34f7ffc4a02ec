package world

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Requirements are assisted-service's hardware requirements for one host role (one role of an entry of
// HW_VALIDATOR_REQUIREMENTS; see docs/dev/hardware-requirements.md in openshift/assisted-service).
type Requirements struct {
	CPUCores int64
	RAMMiB   int64
	// DiskSizeGB is in decimal gigabytes (10^9 bytes): the service compares sizeBytes with GbToBytes.
	DiskSizeGB int64
}

// The documented "default" entry's worker and master requirements.
var (
	DefaultWorkerRequirements = Requirements{CPUCores: 2, RAMMiB: 8192, DiskSizeGB: 100}
	DefaultMasterRequirements = Requirements{CPUCores: 4, RAMMiB: 16384, DiskSizeGB: 100}
)

// PlatformVSphere is the cluster platform on which assisted-service checks disk.EnableUUID.
const PlatformVSphere = "vsphere"

// Host validation IDs (models.HostValidationID) and their categories (validationID.category()).
const (
	ValidationConnected          = "connected"
	ValidationMediaConnected     = "media-connected"
	ValidationHasInventory       = "has-inventory"
	ValidationHasMinCPUCores     = "has-min-cpu-cores"
	ValidationHasMinValidDisks   = "has-min-valid-disks"
	ValidationHasMinMemory       = "has-min-memory"
	ValidationHasCPUCoresForRole = "has-cpu-cores-for-role"
	ValidationHasMemoryForRole   = "has-memory-for-role"
	ValidationHostnameUnique     = "hostname-unique"
	ValidationHostnameValid      = "hostname-valid"
	ValidationVSphereDiskUUID    = "vsphere-disk-uuid-enabled"
	ValidationNTPSynced          = "ntp-synced"

	categoryHardware = "hardware"
	categoryNetwork  = "network"
)

// Host states (models.HostStatus*) the world's hosts pass through.
const (
	stateDiscoveringUnbound  = "discovering-unbound"
	stateKnownUnbound        = "known-unbound"
	stateInsufficientUnbound = "insufficient-unbound"
	stateInsufficient        = "insufficient"
	stateInstalling          = "installing"
	stateAddedToCluster      = "added-to-existing-cluster"
	statePendingUserAction   = "installing-pending-user-action"
)

// Agent condition reasons and messages for a failing host (agent_controller.go, kube-api-conditions.md).
const (
	ReasonValidationsFailing = "ValidationsFailing"
	ReasonAgentNotReady      = "AgentNotReady"
	msgValidationsFailing    = "The agent's validations are failing:"
	msgAgentNotReady         = "The agent is not ready to begin the installation"
)

// forbiddenHostnames are assisted-service's hostutil.ForbiddenHostnames.
var forbiddenHostnames = []string{"localhost", "localhost.localdomain", "localhost4", "localhost4.localdomain4", "localhost6", "localhost6.localdomain6"}

// validation is one entry of an Agent's status.validationsInfo.
type validation struct {
	category, id, status, message string
}

// hostFacts is what the validator reads about one host: its reported inventory and its spec.
type hostFacts struct {
	hasInventory      bool
	cpus, memoryBytes int64
	eligibleDisks     int
	// diskUUIDs is false when a disk the guest could install on reports no UUID (disk.EnableUUID off).
	diskUUIDs bool
	hostname  string // the real hostname: spec.hostname, else the inventory's
	role      string // the effective role: spec.role, else auto-assign
	// ntpSynced: one of status.ntpSources is "synced" (isNTPSynced; a reported empty list fails, an
	// Agent that reports no field at all is not judged, see factsOf).
	ntpSynced bool
}

func factsOf(a *unstructured.Unstructured) hostFacts {
	f := hostFacts{diskUUIDs: true}
	f.cpus, _, _ = unstructured.NestedInt64(a.Object, "status", "inventory", "cpu", "count")
	f.memoryBytes, _, _ = unstructured.NestedInt64(a.Object, "status", "inventory", "memory", "physicalBytes")
	disks, _, _ := unstructured.NestedSlice(a.Object, "status", "inventory", "disks")
	for _, d := range disks {
		m, _ := d.(map[string]any)
		if ok, _, _ := unstructured.NestedBool(m, "installationEligibility", "eligible"); ok {
			f.eligibleDisks++
		}
		if dt, _ := m["driveType"].(string); (dt == "HDD" || dt == "SSD") && m["serial"] == nil {
			f.diskUUIDs = false
		}
	}
	f.hasInventory = f.cpus > 0 && f.memoryBytes > 0 && len(disks) > 0
	// The world's hosts report their sources at registration; an Agent made another way (a test's, or one
	// restored from elsewhere) without the field is not judged on NTP (assisted-service would fail it).
	sources, reported, _ := unstructured.NestedSlice(a.Object, "status", "ntpSources")
	f.ntpSynced = !reported
	for _, src := range sources {
		if m, _ := src.(map[string]any); m["sourceState"] == "synced" {
			f.ntpSynced = true
		}
	}
	f.hostname = realHostname(a)
	f.role, _, _ = unstructured.NestedString(a.Object, "spec", "role")
	if f.role == "" {
		f.role = "auto-assign"
	}
	return f
}

// realHostname is getRealHostname: the requested hostname (spec.hostname) wins over the reported one.
func realHostname(a *unstructured.Unstructured) string {
	if h, _, _ := unstructured.NestedString(a.Object, "spec", "hostname"); h != "" {
		return h
	}
	h, _, _ := unstructured.NestedString(a.Object, "status", "inventory", "hostname")
	return h
}

// roleRequirements are the requirements of a role: master for master, worker for every other role
// (getOCPHostRoleRequirementsForVersion).
func (d *Driver) roleRequirements(role string) Requirements {
	if role == "master" {
		return d.opts.MasterRequirements
	}
	return d.opts.WorkerRequirements
}

// minRequirements are the least of master's and worker's (loadGeneralMinRequirements).
func (d *Driver) minRequirements() Requirements {
	m, w := d.opts.MasterRequirements, d.opts.WorkerRequirements
	return Requirements{CPUCores: min(m.CPUCores, w.CPUCores), RAMMiB: min(m.RAMMiB, w.RAMMiB), DiskSizeGB: min(m.DiskSizeGB, w.DiskSizeGB)}
}

// validate runs the validations the world models. Unbound hosts skip the cluster-scoped ones
// (assisted-service suppresses hostname-unique for a host without a cluster and reports the vSphere one
// pending); bound ones add them, against the other hosts bound to the same cluster deployment.
func (d *Driver) validate(f hostFacts, bound bool, clusterHostnames []string) []validation {
	minReq, roleReq := d.minRequirements(), d.roleRequirements(f.role)
	var out []validation
	add := func(cat, id string, ok bool, good, bad string) {
		st, msg := "success", good
		if !ok {
			st, msg = "failure", bad
		}
		out = append(out, validation{cat, id, st, msg})
	}
	add(categoryNetwork, ValidationConnected, true, "Host is connected", "Host is disconnected")
	add(categoryNetwork, ValidationMediaConnected, true, "Media device is connected", "")
	add(categoryNetwork, ValidationNTPSynced, f.ntpSynced, "Host NTP is synced", "Host couldn't synchronize with any NTP server")
	add(categoryHardware, ValidationHasInventory, f.hasInventory, "Valid inventory exists for the host", "Inventory has not been received for the host")
	if !f.hasInventory { // loadInventory: without CPU, memory and disks the inventory is not valid
		for _, id := range []string{ValidationHasMinCPUCores, ValidationHasMinValidDisks, ValidationHasMinMemory} {
			out = append(out, validation{categoryHardware, id, "pending", "Missing inventory"})
		}
		for _, id := range []string{ValidationHasCPUCoresForRole, ValidationHasMemoryForRole} {
			out = append(out, validation{categoryHardware, id, "pending", "Missing inventory or role"})
		}
		return append(out, validation{categoryHardware, ValidationHostnameValid, "failure", "Missing inventory"})
	}
	add(categoryHardware, ValidationHasMinCPUCores, f.cpus >= minReq.CPUCores, "Sufficient CPU cores",
		fmt.Sprintf("The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is %d, found only %d", minReq.CPUCores, f.cpus))
	add(categoryHardware, ValidationHasMinValidDisks, f.eligibleDisks > 0, "Sufficient disk capacity",
		"No eligible disks were found, please check specific disks to see why they are not eligible")
	add(categoryHardware, ValidationHasMinMemory, f.memoryBytes >= minReq.RAMMiB<<20, "Sufficient minimum RAM",
		fmt.Sprintf("The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is %s, found only %s", bytesToString(minReq.RAMMiB<<20), bytesToString(f.memoryBytes)))
	add(categoryHardware, ValidationHasCPUCoresForRole, f.cpus >= roleReq.CPUCores, "Sufficient CPU cores for role "+f.role,
		fmt.Sprintf("Require at least %d CPU cores for %s role, found only %d", roleReq.CPUCores, f.role, f.cpus))
	add(categoryHardware, ValidationHasMemoryForRole, f.memoryBytes >= roleReq.RAMMiB<<20, "Sufficient RAM for role "+f.role,
		fmt.Sprintf("Require at least %s RAM for role %s, found only %s", bytesToString(roleReq.RAMMiB<<20), f.role, bytesToString(f.memoryBytes)))
	if bound {
		add(categoryHardware, ValidationHostnameUnique, !slices.Contains(clusterHostnames, f.hostname),
			fmt.Sprintf("Hostname %s is unique in cluster", f.hostname), fmt.Sprintf("Hostname %s is not unique in cluster", f.hostname))
	}
	add(categoryHardware, ValidationHostnameValid, !slices.Contains(forbiddenHostnames, f.hostname),
		fmt.Sprintf("Hostname %s is allowed", f.hostname), fmt.Sprintf("The host name %s is forbidden", f.hostname))
	if bound {
		add(categoryHardware, ValidationVSphereDiskUUID, f.diskUUIDs || d.opts.ClusterPlatform != PlatformVSphere,
			"VSphere disk.EnableUUID is enabled for this virtual machine",
			"VSphere disk.EnableUUID isn't enabled for this virtual machine, it's necessary for disks to be mounted properly")
	}
	return out
}

// failures are the messages of the validations that did not succeed, in order, as the Validated
// condition joins them (agent_controller.go validated(): strings.Join(failures, ",")).
func failures(vs []validation) []string {
	var out []string
	for _, v := range vs {
		if v.status != "success" {
			out = append(out, v.message)
		}
	}
	return out
}

// validationsInfo renders validations as status.validationsInfo: category -> [{id, status, message}].
func validationsInfo(vs []validation) map[string]any {
	out := map[string]any{}
	for _, v := range vs {
		list, _ := out[v.category].([]any)
		out[v.category] = append(list, map[string]any{"id": v.id, "status": v.status, "message": v.message})
	}
	return out
}

// failingValidated is the Validated condition of an insufficient host.
func failingValidated(vs []validation) cond {
	return cond{Type: CondValidated, Status: "False", Reason: ReasonValidationsFailing, Message: msgValidationsFailing + " " + strings.Join(failures(vs), ",")}
}

// notReady is RequirementsMet of a host before installation that is not known (insufficient, discovering).
func notReady() cond {
	return cond{Type: CondRequirementsMet, Status: "False", Reason: ReasonAgentNotReady, Message: msgAgentNotReady}
}

// bytesToString is assisted-service's conversions.BytesToString (binary units, two decimals from GiB).
func bytesToString(b int64) string {
	const kib, mib, gib, tib = int64(1) << 10, int64(1) << 20, int64(1) << 30, int64(1) << 40
	switch {
	case b >= tib:
		return fmt.Sprintf("%.2f TiB", float64(b)/float64(tib))
	case b >= gib:
		return fmt.Sprintf("%.2f GiB", float64(b)/float64(gib))
	case b >= mib:
		return fmt.Sprintf("%v MiB", b/mib)
	case b >= kib:
		return fmt.Sprintf("%v KiB", b/kib)
	}
	return fmt.Sprintf("%v bytes", b)
}

// humanizeBytes is go-humanize's Bytes (SI units), which the disk eligibility reasons use.
func humanizeBytes(b int64) string {
	if b < 10 {
		return fmt.Sprintf("%d B", b)
	}
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	v, i := float64(b), 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, units[i])
	}
	return fmt.Sprintf("%.0f %s", v, units[i])
}
