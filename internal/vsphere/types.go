// Package vsphere is the operator's only door to vCenter. Controllers use the Client interface
// and plain Go types; no SOAP type leaks out of this package.
package vsphere

import (
	"context"
	"io"
	"time"
)

// Credentials are read from the pool's credentials Secret. They are never logged.
type Credentials struct {
	Server   string
	Username string
	Password string
	// Insecure skips TLS verification; honoured only when the Secret says insecure: "true".
	Insecure bool
	// CABundle is PEM CA certificates trusted for the vCenter endpoint.
	CABundle []byte
	// Thumbprint is the SHA-256 fingerprint of the vCenter certificate (hex, colons optional).
	Thumbprint string
}

// Ownership is the marker written into a VM's extraConfig at creation and verified before any
// destructive action (SPEC §4). InstanceUUID equals OwnerUID.
type Ownership struct {
	// OwnerUID is the VsphereAgent UID; also the VM's instance UUID.
	OwnerUID string
	// OwnerName is namespace/name of the VsphereAgent (informational).
	OwnerName string
	// PoolUID is the VsphereAgentPool UID.
	PoolUID string
	// PoolName is namespace/name of the pool (informational).
	PoolName string
}

// VMSpec is everything needed to create one VM from scratch.
type VMSpec struct {
	Name       string
	Datacenter string
	// DatastoreCluster is a datastore cluster (placed with Storage DRS) or a single datastore.
	DatastoreCluster string
	ResourcePool     string
	Folder           string
	Network          string
	Tags             []string
	GuestID          string
	SCSIType         string // pvscsi, lsilogic, lsilogic-sas, buslogic
	Firmware         string // efi, bios
	NetworkAdapter   string // vmxnet3, e1000, e1000e
	NumCPUs          int32
	MemoryMiB        int64
	DiskGiB          int32
	EagerlyScrub     bool
	// ISOPath is a datastore path "[datastore] dir/file.iso" attached to the CD-ROM.
	ISOPath   string
	Ownership Ownership
	// Hardware is the optional hardware profile (zero: none).
	Hardware Hardware
	// MACAddress, when set, is the NIC's manually assigned MAC (VMware's static range): static-IP pools
	// give each VM the MAC its NMStateConfig names. Empty: vCenter generates one.
	MACAddress string
	// AdditionalNICs are the VM's NICs after the first (Network, NetworkAdapter, MACAddress), in order.
	AdditionalNICs []NIC
	// ClusterModule, when set, is the cluster module (the pool's anti-affinity group) the VM joins right
	// after it is created and before it is powered on. Placement, not shape: a VM made without it joins
	// later (JoinClusterModule).
	ClusterModule string
	// New says no VM can carry Ownership.OwnerUID yet (the caller created the owner and never tried to
	// create its VM): CreateVM skips the search by instance UUID that finds an earlier attempt's VM.
	New bool
}

// NIC is one network adapter of a VM.
type NIC struct {
	// Network is the port group or network name.
	Network string
	// Adapter is the model (vmxnet3, e1000, e1000e); empty: DefaultNetworkAdapter.
	Adapter string
	// MACAddress, when set, is assigned by hand (VMware's static range); empty: vCenter generates one.
	MACAddress string
}

// VMInfo is what the operator reads back about a VM.
type VMInfo struct {
	Name         string
	InstanceUUID string
	BIOSUUID     string
	MACAddress   string
	// MACAddresses are the MACs of all its NICs in the order they were added (the first is MACAddress).
	MACAddresses []string
	PoweredOn    bool
	Ownership    Ownership // as read from the VM's extraConfig; zero when the VM carries no marker
	// Template is config.template: a template is never the VM we made, only a copy of it.
	Template  bool
	CDROMs    []CDROM
	NumCPUs   int32
	MemoryMiB int64
	// DiskGiB is the boot disk's size; Disks lists every disk, boot disk first.
	DiskGiB  int32
	Disks    []Disk
	Question *Question
	// Folder is the VM's folder relative to the datacenter's VM folder ("a/b"); set by FindVM only.
	Folder string
	// StoragePolicyID is the SPBM profile ID set on the VM's disks when CreateVM created it (empty when
	// the spec names no policy, or the VM was adopted).
	StoragePolicyID string
	// Adopted is set by CreateVM when it found the VM of an earlier attempt (a crash between create and
	// status write) instead of creating one.
	Adopted bool
	// PCIDevices are the VM's PCI passthrough devices and vGPUs (PCIDevicesOf).
	PCIDevices []PCIDevice
	// DiskFirstBoot is whether config.bootOptions.bootOrder starts with the boot disk: an installed worker
	// then boots its disk whatever is in its CD-ROM. CreateVM sets the order on every VM it creates or
	// adopts; for a VM it creates it only starts the reconfigure, so this is false until a read sees it.
	DiskFirstBoot bool
	// ClusterModule is the module CreateVM added the VM to (VMSpec.ClusterModule; empty when none or when
	// adding failed). ClusterModuleErr says why adding failed: the VM is created and powered on anyway
	// (anti-affinity is a wish, never a reason to withhold a worker) and the caller retries the join.
	ClusterModule    string
	ClusterModuleErr error
}

// CDROM is one CD-ROM device of a VM.
type CDROM struct {
	Key       int32
	ISOPath   string // empty when not backed by a datastore ISO
	Connected bool
}

// Question is a pending runtime.question on a VM.
type Question struct {
	ID        string
	MessageID string // e.g. msg.cdromdisconnect.locked
	Text      string
	Choices   []Choice
}

// Choice is one answer of a Question. On a real vCenter Label is a message key ("button.yes") and
// Summary the display text ("Yes", or a localized word such as "Ja"); Key ("0", "1", ...) has no
// fixed meaning.
type Choice struct {
	Key     string
	Label   string
	Summary string
}

// FileInfo describes a datastore file.
type FileInfo struct {
	Path      string // datastore path "[ds] dir/file"
	Name      string // base name
	SizeBytes int64
	Modified  time.Time
}

// EjectRequest asks to disconnect and eject one CD-ROM.
type EjectRequest struct {
	Datacenter   string
	InstanceUUID string
	BIOSUUID     string
	Ownership    Ownership
	DeviceKey    int32
	// ExpectedISOPath must still back the device, else the ejection is refused.
	ExpectedISOPath string
	// TaskRef and QuestionID resume a recorded operation (empty on a first attempt).
	TaskRef    string
	QuestionID string
	// ConfirmQuestionID is set when the caller has checkpointed QuestionID and allows answering it.
	ConfirmQuestionID string
}

// EjectState is where an ejection stands.
type EjectState string

const (
	// EjectDone means the device is disconnected and has no ISO backing.
	EjectDone EjectState = "Done"
	// EjectInProgress means the reconfigure task is running; check again later with TaskRef.
	EjectInProgress EjectState = "InProgress"
	// EjectQuestionPending means the CD-ROM lock question is pending; checkpoint QuestionID, then confirm it.
	EjectQuestionPending EjectState = "QuestionPending"
)

// EjectResult reports an ejection step.
type EjectResult struct {
	State      EjectState
	TaskRef    string
	QuestionID string
	// Answered is set when this call answered the confirmed CD-ROM lock question.
	Answered bool
	// Adopted is set when a reconfigure found running on the VM (started before a crash, its task
	// never checkpointed) was taken over instead of starting a second one.
	Adopted bool
	// FoundEmpty is set when the CD-ROM was already empty and the request named no task: nothing was
	// ejected by this call (emptied outside the operator, or by an attempt that lost its task).
	FoundEmpty bool
	// VM is the VM as this call read it when the state is EjectDone (nil otherwise): its CD-ROMs show
	// whether another one still holds the pool's ISO without reading the VM again.
	VM *VMInfo
}

// Client is one logged-in vCenter session. Implementations are safe for concurrent use.
type Client interface {
	// CreateVM creates (or finds, after a crash) the VM whose instance UUID is spec.Ownership.OwnerUID,
	// powers it on (already on is success) and returns its identity.
	CreateVM(ctx context.Context, spec VMSpec) (*VMInfo, error)
	// FindVM looks a VM up by instance UUID, then BIOS UUID. Returns an error classified NotFound when absent.
	FindVM(ctx context.Context, datacenter, instanceUUID, biosUUID string) (*VMInfo, error)
	// LookupVMs reads, in one call, the VMs whose references the session knows (created or found by it),
	// keyed by lower-case instance UUID; the others are left out (look them up with FindVM).
	LookupVMs(ctx context.Context, datacenter string, instanceUUIDs []string) (map[string]*VMInfo, error)
	// PowerOnVM powers an owned VM on after verifying its ownership marker; already on is success, absent
	// is a NotFound error.
	PowerOnVM(ctx context.Context, datacenter, instanceUUID string, owner Ownership) error
	// ResetVM makes an owned VM (identity and BIOS UUID verified) boot its disk first and resets it (a
	// powered-off one is powered on): a worker that booted its discovery image again starts its installed
	// disk. Absent is a NotFound error.
	ResetVM(ctx context.Context, datacenter, instanceUUID, biosUUID string, owner Ownership) error
	// SetDiskFirstBoot makes an owned VM (identity and BIOS UUID verified) boot its disk first, waiting
	// for the reconfigure, and reports whether it changed the order; already so, or no disk, is success
	// with no change. Absent is a NotFound error.
	SetDiskFirstBoot(ctx context.Context, datacenter, instanceUUID, biosUUID string, owner Ownership) (bool, error)
	// DestroyVM powers off and destroys the VM after verifying its ownership marker and that it is the
	// original (instance UUID = owner UID, no template; a copy is a ClassOwnership error); absent is success.
	DestroyVM(ctx context.Context, datacenter, instanceUUID string, owner Ownership) error
	// ListPoolVMs lists VMs in the datacenter whose ownership marker names poolUID, copies included
	// (VMInfo.IsCopy: clones, templates, replicas; never to be counted, changed or destroyed).
	ListPoolVMs(ctx context.Context, datacenter, poolUID string) ([]VMInfo, error)
	// ListMarkedVMs lists the VMs in the datacenter that carry any pool's ownership marker, copies included
	// (one listing that the pools of one vCenter user share for their orphan scans).
	ListMarkedVMs(ctx context.Context, datacenter string) ([]VMInfo, error)
	// NICMACs lists the MACs of every NIC of every VM in the datacenter (any owner), lower case.
	NICMACs(ctx context.Context, datacenter string) ([]string, error)

	// UploadISO streams r to a temporary name next to finalPath, then moves it to finalPath
	// ("[ds] dir/name.iso"). The final name never holds a partial file. size may be -1 if unknown.
	UploadISO(ctx context.Context, datacenter, finalPath string, r io.Reader, size int64) error
	// UploadFile streams r to exactly path (its folder is created), without a temporary name or a
	// move; a failed upload deletes what it wrote (best effort). For callers that name the file only
	// after its bytes went by (a content address): upload to a temporary name, then one MoveFile.
	UploadFile(ctx context.Context, datacenter, path string, r io.Reader, size int64) error
	// MoveFile renames a datastore file within the datacenter, overwriting dstPath if it exists.
	MoveFile(ctx context.Context, datacenter, srcPath, dstPath string) error
	// StatFile returns the file or a NotFound error.
	StatFile(ctx context.Context, datacenter, path string) (*FileInfo, error)
	// ListFiles lists files directly under "[ds] dir".
	ListFiles(ctx context.Context, datacenter, dirPath string) ([]FileInfo, error)
	// DeleteFile deletes a datastore file; absent is success.
	DeleteFile(ctx context.Context, datacenter, path string) error
	// VMsWithISO lists names of all VMs in the datacenter (any power state, any owner) whose CD-ROM
	// is backed by isoPath.
	VMsWithISO(ctx context.Context, datacenter, isoPath string) ([]string, error)

	// CheckPlacement resolves every object a pool's VMs are placed on, read-only, and lists the ones that
	// do not exist or are not of the right kind; an error means vCenter could not be asked.
	CheckPlacement(ctx context.Context, spec PlacementSpec) ([]PlacementProblem, error)
	// CheckPrivileges asks vCenter, read-only, whether the session holds the privileges the operator uses
	// on the folder, resource pool, datastores and network of spec (RequiredPrivileges) and lists the
	// entities with missing ones; an error means vCenter could not be asked.
	CheckPrivileges(ctx context.Context, spec PrivilegeSpec) ([]MissingPrivileges, error)
	// ReadCapacity reads, read-only, the CPU and memory of the resource pool's owner cluster (or host) and
	// the space of the datastore (or datastore cluster members) of spec; see HeadroomFor.
	ReadCapacity(ctx context.Context, spec CapacitySpec) (*Capacity, error)
	// ReadHostDevices reads, read-only, the PCI passthrough devices and vGPU profiles each host of the
	// resource pool's owner cluster (or standalone host) offers; see FitDevices.
	ReadHostDevices(ctx context.Context, spec HostDevicesSpec) (*HostDevices, error)

	// AdoptionCandidates lists, read-only, every VM of the datacenter named name, with its folder and
	// Notes: what adopting an upstream operator's VM compares.
	AdoptionCandidates(ctx context.Context, datacenter, name string) ([]AdoptionCandidate, error)
	// AdoptVM sets the instance UUID and the ownership marker of VM ref (from AdoptionCandidates) to
	// owner's, after re-checking its BIOS UUID and that it carries no other owner's marker.
	AdoptVM(ctx context.Context, datacenter, ref, biosUUID string, owner Ownership) (*VMInfo, error)

	// ComputeClusterOf resolves, read-only, the compute resource owning resourcePool and whether DRS is on.
	ComputeClusterOf(ctx context.Context, datacenter, resourcePool string) (*ComputeCluster, error)
	// ClusterModules lists the cluster modules of a compute cluster with their members' ownership markers;
	// a vCenter without the API gives a ClassUnsupported error.
	ClusterModules(ctx context.Context, clusterRef string) ([]ClusterModule, error)
	// CreateClusterModule creates a cluster module in the compute cluster and returns its ID.
	CreateClusterModule(ctx context.Context, clusterRef string) (string, error)
	// DeleteClusterModule removes the module's members and deletes it; absent is success. Callers delete
	// only modules their own status names.
	DeleteClusterModule(ctx context.Context, moduleID string) error
	// JoinClusterModule adds an owned VM to the module (already a member is success).
	JoinClusterModule(ctx context.Context, datacenter, moduleID, instanceUUID string, owner Ownership) error
	// LeaveClusterModule removes an owned VM from the module; absent VM or module, or not a member, is success.
	LeaveClusterModule(ctx context.Context, datacenter, moduleID, instanceUUID string, owner Ownership) error

	// EjectISO disconnects and ejects one CD-ROM of an owned VM (see EjectRequest). It never blocks on a
	// task a guest holds: it returns EjectInProgress/EjectQuestionPending and is called again later.
	EjectISO(ctx context.Context, req EjectRequest) (*EjectResult, error)
}

// Sessions hands out cached, logged-in clients keyed by (server, user, credential hash).
type Sessions interface {
	Get(ctx context.Context, creds Credentials) (Client, error)
	// Close logs every session out.
	Close(ctx context.Context)
}
