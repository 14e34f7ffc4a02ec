package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func pciDevices(devs ...map[string]interface{}) edit {
	items := make([]interface{}, 0, len(devs))
	for _, d := range devs {
		items = append(items, d)
	}
	return hardware("pciDevices", items)
}

var (
	t4Passthrough = map[string]interface{}{"vendorId": 4318, "deviceId": 7864}
	t4VGPU        = map[string]interface{}{"vGPUProfile": "grid_t4-4q"}
)

var invalidPCIDevices = []invalidCase{
	one("vendorId without deviceId", "spec.template.hardware.pciDevices[0]", pciDevices(map[string]interface{}{"vendorId": 4318})),
	one("deviceId without vendorId", "spec.template.hardware.pciDevices[0]", pciDevices(map[string]interface{}{"deviceId": 7864})),
	one("neither IDs nor a vGPU profile", "spec.template.hardware.pciDevices[0]", pciDevices(map[string]interface{}{})),
	one("IDs and a vGPU profile in one device", "spec.template.hardware.pciDevices[0]",
		pciDevices(map[string]interface{}{"vendorId": 4318, "deviceId": 7864, "vGPUProfile": "grid_t4-4q"})),
	one("customLabel on a vGPU profile", "spec.template.hardware.pciDevices[0]",
		pciDevices(map[string]interface{}{"vGPUProfile": "grid_t4-4q", "customLabel": "gpu"})),
	one("vendorId above 16 bits", "spec.template.hardware.pciDevices[0].vendorId", pciDevices(map[string]interface{}{"vendorId": 65536, "deviceId": 1})),
	one("deviceId negative", "spec.template.hardware.pciDevices[0].deviceId", pciDevices(map[string]interface{}{"vendorId": 4318, "deviceId": -1})),
	one("vGPU profile with a space", "spec.template.hardware.pciDevices[0].vGPUProfile", pciDevices(map[string]interface{}{"vGPUProfile": "grid t4"})),
	one("vGPU profile too long", "spec.template.hardware.pciDevices[0].vGPUProfile", pciDevices(map[string]interface{}{"vGPUProfile": strings.Repeat("g", 129)})),
	one("more than 16 devices", "spec.template.hardware.pciDevices", hardware("pciDevices", func() []interface{} {
		out := make([]interface{}, 17)
		for i := range out {
			out[i] = t4VGPU
		}
		return out
	}())),
	one("devices with a partial memory reservation", "spec.template.hardware.memoryReservationMiB",
		set("spec.template.memoryMiB", 16384), hardware("memoryReservationMiB", 8192), pciDevices(t4VGPU)),
	one("devices with a partial reservation of the default 16384 MiB", "spec.template.hardware.memoryReservationMiB",
		hardware("memoryReservationMiB", 4096), pciDevices(t4Passthrough)),
}

func TestInvalidPCIDevicesAreRefused(t *testing.T) {
	runInvalid(t, validPoolYAML, "gpu", invalidPCIDevices)
}

// A pool with devices and a partial memory reservation is refused with a message that says why: vSphere
// reserves all the memory of a VM with a passthrough or vGPU device.
func TestPartialReservationWithDevicesIsExplained(t *testing.T) {
	obj := objectFromYAML(t, validPoolYAML)
	obj.SetName(uniqueName("gpu"))
	set("spec.template.memoryMiB", 32768)(t, obj)
	hardware("memoryReservationMiB", 16384)(t, obj)
	pciDevices(t4Passthrough, t4VGPU)(t, obj)
	err := k8s.Create(ctx, obj)
	assertRefused(t, err, "spec.template.hardware.memoryReservationMiB")
	for _, want := range []string{"must be unset or equal to spec.template.memoryMiB", "spec.template.hardware.pciDevices", "reserves all the memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}

// Devices with the reservation unset or equal to the memory, a passthrough device with its label and a
// vGPU profile, are accepted as written.
func TestPCIDevicesAreAccepted(t *testing.T) {
	for name, reservation := range map[string]interface{}{"reservation unset": nil, "reservation equal to memory": 32768} {
		t.Run(name, func(t *testing.T) {
			obj := objectFromYAML(t, validPoolYAML)
			obj.SetName(uniqueName("gpu"))
			set("spec.template.memoryMiB", 32768)(t, obj)
			if reservation != nil {
				hardware("memoryReservationMiB", reservation)(t, obj)
			}
			pciDevices(map[string]interface{}{"vendorId": 4318, "deviceId": 7864, "customLabel": "gpu-t4"}, t4VGPU)(t, obj)
			stored := createAndRead(t, obj)
			got, _, _ := unstructured.NestedSlice(stored.Object, "spec", "template", "hardware", "pciDevices")
			if len(got) != 2 || got[1].(map[string]interface{})["vGPUProfile"] != "grid_t4-4q" {
				t.Fatalf("pciDevices = %v", got)
			}
		})
	}
}
