package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fullHardware sets every knob of spec.template.hardware.
var fullHardware = map[string]interface{}{
	"numCoresPerSocket":    2,
	"memoryReservationMiB": 8192,
	"dataDisks": []interface{}{
		map[string]interface{}{"name": "data", "sizeGiB": 200, "provisioningMode": "Thin"},
		map[string]interface{}{"name": "logs", "sizeGiB": 50, "provisioningMode": "Thick", "datastore": "LocalDS_1"},
		map[string]interface{}{"name": "etcd", "sizeGiB": 20, "provisioningMode": "EagerlyZeroed"},
	},
	"storagePolicyName":    "vSAN Default Storage Policy",
	"nestedHVEnabled":      true,
	"efiSecureBootEnabled": true,
	"extraConfig": map[string]interface{}{
		"guestinfo.role": "worker", "numa.vcpu.preferHT": "TRUE", "pciPassthru.use64bitMMIO": "TRUE",
		"sched.cpu.latencySensitivity": "high",
	},
}

func hardware(key string, value interface{}) edit {
	return set("spec.template.hardware."+key, value)
}

func disk(fields map[string]interface{}) edit {
	return set("spec.template.hardware.dataDisks", []interface{}{fields})
}

var invalidHardware = []invalidCase{
	one("numCoresPerSocket zero", "spec.template.hardware.numCoresPerSocket", hardware("numCoresPerSocket", 0)),
	one("numCoresPerSocket not dividing numCPUs", "spec.template.hardware.numCoresPerSocket",
		set("spec.template.numCPUs", 6), hardware("numCoresPerSocket", 4)),
	one("numCoresPerSocket not dividing the default 4 CPUs", "spec.template.hardware.numCoresPerSocket", hardware("numCoresPerSocket", 3)),
	one("memoryReservationMiB negative", "spec.template.hardware.memoryReservationMiB", hardware("memoryReservationMiB", -1)),
	one("memoryReservationMiB above memoryMiB", "spec.template.hardware.memoryReservationMiB",
		set("spec.template.memoryMiB", 8192), hardware("memoryReservationMiB", 8196)),
	one("memoryReservationMiB above the default 16384 MiB", "spec.template.hardware.memoryReservationMiB", hardware("memoryReservationMiB", 16388)),
	one("data disk without name", "spec.template.hardware.dataDisks[0].name", disk(map[string]interface{}{"sizeGiB": 10})),
	one("data disk name uppercase", "spec.template.hardware.dataDisks[0].name", disk(map[string]interface{}{"name": "Data", "sizeGiB": 10})),
	one("data disk without size", "spec.template.hardware.dataDisks[0].sizeGiB", disk(map[string]interface{}{"name": "data"})),
	one("data disk size zero", "spec.template.hardware.dataDisks[0].sizeGiB", disk(map[string]interface{}{"name": "data", "sizeGiB": 0})),
	one("data disk size above 16384", "spec.template.hardware.dataDisks[0].sizeGiB", disk(map[string]interface{}{"name": "data", "sizeGiB": 16385})),
	one("data disk provisioning unknown", "spec.template.hardware.dataDisks[0].provisioningMode",
		disk(map[string]interface{}{"name": "data", "sizeGiB": 10, "provisioningMode": "Sparse"})),
	one("data disk datastore too long", "spec.template.hardware.dataDisks[0].datastore",
		disk(map[string]interface{}{"name": "data", "sizeGiB": 10, "datastore": strings.Repeat("d", 256)})),
	one("data disks with the same name", "spec.template.hardware.dataDisks[1]", hardware("dataDisks", []interface{}{
		map[string]interface{}{"name": "data", "sizeGiB": 10}, map[string]interface{}{"name": "data", "sizeGiB": 20}})),
	one("more than 14 data disks", "spec.template.hardware.dataDisks", hardware("dataDisks", dataDisks(15))),
	one("storagePolicyName empty", "spec.template.hardware.storagePolicyName", hardware("storagePolicyName", "")),
	one("storagePolicyName too long", "spec.template.hardware.storagePolicyName", hardware("storagePolicyName", strings.Repeat("p", 256))),
	one("secure boot with bios firmware", "spec.template.hardware.efiSecureBootEnabled",
		set("spec.vsphere.firmware", "bios"), hardware("efiSecureBootEnabled", true)),
	one("extraConfig disk.EnableUUID (the operator's)", "spec.template.hardware.extraConfig",
		hardware("extraConfig", map[string]interface{}{"disk.EnableUUID": "FALSE"})),
	one("extraConfig ownership marker", "spec.template.hardware.extraConfig",
		hardware("extraConfig", map[string]interface{}{"agent-forge.owner-uid": "x"})),
	one("extraConfig msg.autoanswer", "spec.template.hardware.extraConfig",
		hardware("extraConfig", map[string]interface{}{"msg.autoanswer": "TRUE"})),
	one("extraConfig cdrom lock warning", "spec.template.hardware.extraConfig",
		hardware("extraConfig", map[string]interface{}{"cdrom.showIsoLockWarning": "FALSE"})),
	one("extraConfig a NIC key", "spec.template.hardware.extraConfig",
		hardware("extraConfig", map[string]interface{}{"ethernet0.address": "00:50:56:00:00:01"})),
	one("extraConfig guestinfo without a name", "spec.template.hardware.extraConfig",
		hardware("extraConfig", map[string]interface{}{"guestinfo.": "x"})),
	one("extraConfig value too long", "spec.template.hardware.extraConfig.guestinfo.big",
		hardware("extraConfig", map[string]interface{}{"guestinfo.big": strings.Repeat("v", 1025)})),
}

func TestInvalidHardwareProfilesAreRefused(t *testing.T) {
	runInvalid(t, validPoolYAML, "hw", invalidHardware)
}

func TestExtraConfigRefusalExplainsTheAllowList(t *testing.T) {
	obj := objectFromYAML(t, validPoolYAML)
	obj.SetName(uniqueName("hw"))
	hardware("extraConfig", map[string]interface{}{"disk.EnableUUID": "FALSE"})(t, obj)
	err := k8s.Create(ctx, obj)
	if err == nil || !strings.Contains(err.Error(), "guestinfo.*, numa.*, pciPassthru.* or sched.cpu.latencySensitivity") {
		t.Fatalf("refusal does not name the allow-list: %v", err)
	}
}

func TestFullHardwareProfileIsAcceptedWithDefaults(t *testing.T) {
	obj := objectFromYAML(t, validPoolYAML)
	obj.SetName(uniqueName("hw"))
	set("spec.template.hardware", fullHardware)(t, obj)
	hardware("dataDisks", []interface{}{
		map[string]interface{}{"name": "data", "sizeGiB": 200},
		map[string]interface{}{"name": "logs", "sizeGiB": 50, "provisioningMode": "Thick", "datastore": "LocalDS_1"},
	})(t, obj)
	stored := createAndRead(t, obj)
	got, _, _ := unstructured.NestedSlice(stored.Object, "spec", "template", "hardware", "dataDisks")
	if len(got) != 2 || got[0].(map[string]interface{})["provisioningMode"] != "Thin" {
		t.Fatalf("dataDisks = %v, want the first defaulted to Thin", got)
	}
	if ec, _, _ := unstructured.NestedStringMap(stored.Object, "spec", "template", "hardware", "extraConfig"); len(ec) != 4 {
		t.Fatalf("extraConfig = %v", ec)
	}
}

func dataDisks(n int) []interface{} {
	out := make([]interface{}, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, map[string]interface{}{"name": "d" + strings.Repeat("x", i), "sizeGiB": 1})
	}
	return out
}
