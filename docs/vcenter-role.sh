#!/usr/bin/env bash
# Creates (or resets) the vCenter role agent-forge-operator's preflight checks and assigns it to the pool's
# account on the pool's objects, as docs/vcenter-privileges.md says. Needs govc (any recent release, or
# `make govc` from this repository) logged in as a vCenter administrator through its usual variables:
#
#   export GOVC_URL=https://vcenter.example.com GOVC_USERNAME=administrator@vsphere.local GOVC_PASSWORD=...
#   PRINCIPAL=agent-forge@vsphere.local DATACENTER=/DC0 FOLDER=/DC0/vm \
#   RESOURCE_POOL=/DC0/host/DC0_C0/Resources DATASTORE=/DC0/datastore/LocalDS_0 \
#   ISO_DATASTORE=/DC0/datastore/LocalDS_0 NETWORK="/DC0/network/VM Network" docs/vcenter-role.sh
#
# FOLDER is the pool's spec.vsphere.folder, or its parent when the operator is to create it (the default
# folder, named after the hosted cluster, is created under the datacenter's VM folder). DATASTORE is the
# datastore or the datastore cluster of spec.vsphere.datastoreCluster. Optional: ROLE (default agent-forge),
# CLUSTER (the compute cluster owning RESOURCE_POOL, e.g. /DC0/host/DC0_C0) for pools with
# spec.antiAffinity.mode ClusterModule, GROUP=true when PRINCIPAL is a group, EXTRA_PRIVILEGES (space-separated) for what only some pools need and
# the preflight does not check (docs/vcenter-privileges.md, "Not checked by the preflight").
#
# The role holds exactly the privileges the preflight asks vCenter about (every option on); test/docs runs
# this script against the vCenter simulator and compares the role with vsphere.RequiredPrivileges.
set -euo pipefail

ROLE="${ROLE:-agent-forge}"
GROUP="${GROUP:-false}"
GOVC="${GOVC:-govc}"
for v in PRINCIPAL DATACENTER FOLDER RESOURCE_POOL DATASTORE ISO_DATASTORE NETWORK; do
	if [ -z "${!v:-}" ]; then
		echo "vcenter-role.sh: set $v (see the comment at the top of this script)" >&2
		exit 2
	fi
done

privileges=(
	# the VM folder's parent, while the operator creates the folder
	Folder.Create
	# the VM folder, inherited by the VMs in it
	VirtualMachine.Inventory.Create
	VirtualMachine.Inventory.Delete
	VirtualMachine.Config.AddNewDisk
	VirtualMachine.Config.AddRemoveDevice
	VirtualMachine.Config.AdvancedConfig
	VirtualMachine.Config.CPUCount
	VirtualMachine.Config.Memory
	# spec.template.hardware.pciDevices (all memory reserved) and memoryReservationMiB
	VirtualMachine.Config.Resource
	# the boot order [disk, CD-ROM] set after the first power-on (also nested HV and EFI secure boot)
	VirtualMachine.Config.Settings
	VirtualMachine.Interact.PowerOn
	VirtualMachine.Interact.PowerOff
	# spec.iso.ejectAfterInstall
	VirtualMachine.Interact.SetCDMedia
	VirtualMachine.Interact.DeviceConnection
	VirtualMachine.Interact.AnswerQuestion
	# spec.iso.recoverDiscoveryBoot (with the three above)
	VirtualMachine.Interact.Reset
	# spec.vsphere.vmTags (the tags themselves also need InventoryService.Tagging.AttachTag)
	InventoryService.Tagging.ObjectAttachable
	# the resource pool
	Resource.AssignVMToPool
	# the datastore (or each datastore of the datastore cluster)
	Datastore.AllocateSpace
	# the ISO datastore
	Datastore.Browse
	Datastore.FileManagement
	# the network
	Network.Assign
	# spec.antiAffinity.mode ClusterModule: the pool's cluster modules, on the compute cluster (VMware publishes
	# no privilege for the cluster-modules API; this is the cautious choice, see docs/vcenter-privileges.md)
	Host.Inventory.EditCluster
)
# shellcheck disable=SC2206 # EXTRA_PRIVILEGES is a space-separated list of privilege IDs
privileges+=(${EXTRA_PRIVILEGES:-})

# role.update sets the role's privileges to exactly this list, so running the script again resets the role.
if "$GOVC" role.ls "$ROLE" >/dev/null 2>&1; then
	"$GOVC" role.update "$ROLE" "${privileges[@]}"
else
	"$GOVC" role.create "$ROLE" "${privileges[@]}"
fi

# One permission per object and principal: vCenter replaces an earlier assignment on the same object, so an
# ISO datastore that is also the VM datastore keeps the propagating assignment.
assign() { # PATH PROPAGATE
	"$GOVC" permissions.set -principal "$PRINCIPAL" -group="$GROUP" -role "$ROLE" -propagate="$2" "$1"
}
assign "$DATACENTER" false    # lookups, the container view over the VMs, the file manager's scope
assign "$FOLDER" true         # create the folder, create/destroy/configure the VMs inside it
assign "$RESOURCE_POOL" true  # place the VMs
assign "$DATASTORE" true      # allocate space (propagates to the datastores of a datastore cluster)
if [ "$ISO_DATASTORE" != "$DATASTORE" ]; then
	assign "$ISO_DATASTORE" false # browse and upload the discovery ISO
fi
assign "$NETWORK" false       # attach the VMs' NIC
if [ -n "${CLUSTER:-}" ]; then
	assign "$CLUSTER" false   # anti-affinity: the pool's cluster modules
fi
echo "role $ROLE assigned to $PRINCIPAL"
