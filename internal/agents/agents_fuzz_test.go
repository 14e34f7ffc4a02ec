package agents

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json"
)

// renderMAC writes six bytes as a MAC with per-digit case and per-position separator chosen by the
// bits of style (':' or '-'), with optional surrounding blanks: the forms vSphere, assisted-service and
// people write.
func renderMAC(b []byte, style uint32) string {
	var s strings.Builder
	if style&(1<<31) != 0 {
		s.WriteString(" \t")
	}
	for i := 0; i < 6; i++ {
		if i > 0 {
			if style&(1<<(12+i)) != 0 {
				s.WriteByte('-')
			} else {
				s.WriteByte(':')
			}
		}
		pair := hex.EncodeToString(b[i : i+1])
		for j := 0; j < 2; j++ {
			c := pair[j]
			if style&(1<<(2*i+j)) != 0 {
				c = strings.ToUpper(string(c))[0]
			}
			s.WriteByte(c)
		}
	}
	if style&(1<<30) != 0 {
		s.WriteString("\n ")
	}
	return s.String()
}

func canonicalMAC(b []byte) string {
	parts := make([]string, 6)
	for i := range parts {
		parts[i] = hex.EncodeToString(b[i : i+1])
	}
	return strings.Join(parts, ":")
}

// renderUUID writes 16 bytes as a BIOS UUID (8-4-4-4-12), upper-cased when upper.
func renderUUID(b []byte, upper bool) string {
	h := hex.EncodeToString(b)
	s := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	if upper {
		s = strings.ToUpper(s)
	}
	return s
}

func agentObject(macs []string, serial any) *unstructured.Unstructured {
	ifaces := make([]any, 0, len(macs))
	for _, m := range macs {
		ifaces = append(ifaces, map[string]any{"name": "ens192", "macAddress": m})
	}
	inv := map[string]any{"interfaces": ifaces}
	if serial != nil {
		inv["systemVendor"] = map[string]any{"serialNumber": serial, "manufacturer": "VMware, Inc."}
	}
	u := New(AgentGVK)
	u.SetName("agent")
	u.SetNamespace("clusters")
	u.Object["status"] = map[string]any{"inventory": inv}
	return u
}

// FuzzMACAndUUID checks normalisation and VM → Agent matching:
//
//   - a MAC normalises to its canonical lower-case colon form whatever the case of each digit, the
//     separator (':' or '-') at each position and surrounding blanks; NormalizeMAC is idempotent;
//   - a BIOS UUID normalises to its 32 lower-case hex digits in upper or lower case and as the VMware
//     serial number SerialFromBIOSUUID renders ("VMware-42 1e ...-..."); different UUIDs never
//     normalise alike; NormalizeUUID of any string is "" or 32 lower-case hex digits and idempotent;
//   - an Agent read from an object with these interfaces and serial is the host of a VM exactly when
//     one of its MACs is the VM's MAC (in any rendering) and its serial, when it reports a usable one,
//     is the VM's BIOS UUID; an empty or blank MAC never matches anything, and a blank reported MAC
//     is not one of the Agent's MACs.
func FuzzMACAndUUID(f *testing.F) {
	vmMAC := []byte{0x00, 0x50, 0x56, 0xaa, 0xbb, 0xcc}
	uuid := []byte{0x42, 0x1e, 0x5c, 0x8f, 0x2d, 0x3a, 0x4b, 0x5c, 0x9d, 0x8e, 0x7f, 0x6a, 0x5b, 0x4c, 0x3d, 0x2e}
	other := append([]byte{0x52}, uuid[1:]...)
	f.Add(append(append([]byte{}, vmMAC...), vmMAC...), uint32(0), uint32(0xffffffff), append(append([]byte{}, uuid...), uuid...), uint8(0), "")
	f.Add(append(append([]byte{}, vmMAC...), 0x00, 0x50, 0x56, 0xaa, 0xbb, 0xcd), uint32(0x7f000), uint32(0), append(append([]byte{}, uuid...), other...), uint8(1), "")
	f.Add(append(append([]byte{}, vmMAC...), vmMAC...), uint32(1<<31), uint32(1<<30), append(append([]byte{}, uuid...), other...), uint8(2), "")
	f.Add(append(append([]byte{}, vmMAC...), vmMAC...), uint32(0), uint32(0), append(append([]byte{}, uuid...), uuid...), uint8(3), "Not Specified")
	f.Add(append(append([]byte{}, vmMAC...), vmMAC...), uint32(0), uint32(0), append(append([]byte{}, uuid...), uuid...), uint8(4), " ")
	f.Add(append(append([]byte{}, vmMAC...), vmMAC...), uint32(0), uint32(0), append(append([]byte{}, uuid...), uuid...), uint8(5), "VMware-42 1E 5C 8F 2D 3A 4B 5C-9D 8E 7F 6A 5B 4C 3D 2E")
	f.Fuzz(func(t *testing.T, macs []byte, vmStyle, agentStyle uint32, uuids []byte, serialKind uint8, raw string) {
		// Arbitrary strings: shape of the normalisers' output, idempotence.
		if n := NormalizeUUID(raw); n != "" {
			if _, err := hex.DecodeString(n); err != nil || len(n) != 32 || n != strings.ToLower(n) {
				t.Fatalf("NormalizeUUID(%q) = %q: not 32 lower-case hex digits", raw, n)
			}
			if NormalizeUUID(n) != n {
				t.Fatalf("NormalizeUUID not idempotent on %q", raw)
			}
		}
		if n := NormalizeMAC(raw); NormalizeMAC(n) != n {
			t.Fatalf("NormalizeMAC not idempotent: %q -> %q -> %q", raw, n, NormalizeMAC(n))
		}
		if len(macs) < 12 || len(uuids) < 32 {
			return
		}
		vm, ag := macs[:6], macs[6:12]
		vmUUID, agUUID := uuids[:16], uuids[16:32]

		// MAC normalisation.
		for _, style := range []uint32{vmStyle, agentStyle} {
			if got := NormalizeMAC(renderMAC(vm, style)); got != canonicalMAC(vm) {
				t.Fatalf("NormalizeMAC(%q) = %q, want %q", renderMAC(vm, style), got, canonicalMAC(vm))
			}
		}
		// UUID normalisation.
		want := hex.EncodeToString(vmUUID)
		for _, form := range []string{renderUUID(vmUUID, false), renderUUID(vmUUID, true), SerialFromBIOSUUID(renderUUID(vmUUID, vmStyle&1 != 0)),
			strings.ToUpper(SerialFromBIOSUUID(renderUUID(vmUUID, false))), " " + SerialFromBIOSUUID(renderUUID(vmUUID, false)) + " "} {
			if got := NormalizeUUID(form); got != want {
				t.Fatalf("NormalizeUUID(%q) = %q, want %q", form, got, want)
			}
		}
		if s := SerialFromBIOSUUID(renderUUID(vmUUID, false)); !strings.HasPrefix(s, "VMware-") || len(s) != len("VMware-")+47 {
			t.Fatalf("SerialFromBIOSUUID = %q: not a VMware serial number", s)
		}
		sameUUID := string(vmUUID) == string(agUUID)
		if (NormalizeUUID(renderUUID(vmUUID, false)) == NormalizeUUID(renderUUID(agUUID, true))) != sameUUID {
			t.Fatalf("UUIDs %x and %x: normalised equality disagrees with equality", vmUUID, agUUID)
		}

		// Matching through the unstructured reader.
		var serial any
		usable := true // the Agent reports a serial that names a UUID
		switch serialKind % 6 {
		case 0:
			serial = SerialFromBIOSUUID(renderUUID(agUUID, false))
		case 1:
			serial = renderUUID(agUUID, agentStyle&1 != 0)
		case 2:
			serial, usable = nil, false
		case 3:
			serial, usable = raw, NormalizeUUID(raw) != ""
		case 4:
			serial, usable = "", false
		case 5:
			serial, usable = int64(len(raw)), false // wrong type: not a reported serial
		}
		agentMACs := []string{renderMAC(ag, agentStyle)}
		if serialKind&0x80 != 0 {
			agentMACs = append(agentMACs, " ", "\t", raw) // blank entries and noise
		}
		a := AgentFrom(agentObject(agentMACs, serial))
		for _, m := range a.MACs {
			if m == "" {
				t.Fatalf("Agent MACs %q contain an empty MAC (reported %q)", a.MACs, agentMACs)
			}
		}
		if a.HasMAC("") || a.HasMAC("  ") || a.IsHostOf("", renderUUID(vmUUID, false)) {
			t.Fatalf("an empty VM MAC matched Agent MACs %q", a.MACs)
		}
		macAgrees := string(vm) == string(ag) ||
			(serialKind&0x80 != 0 && NormalizeMAC(raw) == canonicalMAC(vm))
		serialAgrees := false // a MAC alone is no proof: the serial must be reported and agree
		if usable {
			if serialKind%6 == 3 {
				serialAgrees = NormalizeUUID(raw) == want
			} else {
				serialAgrees = sameUUID
			}
		}
		got := a.IsHostOf(renderMAC(vm, vmStyle), renderUUID(vmUUID, vmStyle&2 != 0))
		if got != (macAgrees && serialAgrees) {
			t.Fatalf("IsHostOf(VM MAC %s, UUID %x) = %t for Agent MACs %q serial %v; MAC agrees %t, serial agrees %t",
				canonicalMAC(vm), vmUUID, got, a.MACs, serial, macAgrees, serialAgrees)
		}
		if got && usable && NormalizeUUID(a.Serial) != want {
			t.Fatalf("matched an Agent whose serial %q is another machine's", a.Serial)
		}
	})
}

// readerPaths are the places the readers look; the fuzzer plants a value of any shape at one of them.
var readerPaths = [][]string{
	{"status", "conditions"},
	{"status", "conditions", "0"},
	{"status", "conditions", "0", "status"},
	{"status", "conditions", "0", "type"},
	{"status"},
	{"spec"},
	{"metadata"},
	{"metadata", "labels"},
	{"metadata", "annotations"},
	{"metadata", "deletionTimestamp"},
	{"metadata", "ownerReferences"},
	{"metadata", "ownerReferences", "0"},
	{"spec", "approved"},
	{"spec", "hostname"},
	{"spec", "clusterDeploymentName"},
	{"status", "inventory"},
	{"status", "inventory", "interfaces"},
	{"status", "inventory", "interfaces", "0"},
	{"status", "inventory", "interfaces", "0", "macAddress"},
	{"status", "inventory", "systemVendor"},
	{"status", "agentRef"},
	{"spec", "agentLabelSelector"},
	{"spec", "agentLabelSelector", "matchExpressions"},
	{"spec", "agentLabelSelector", "matchLabels"},
	{"status", "phase"},
	{"status", "nodeRef"},
	{"status", "isoDownloadURL"},
	{"status", "createdTime"},
	{"spec", "replicas"},
	{"spec", "platform", "agent", "agentLabelSelector"},
	{"spec", "platform", "agent", "agentLabelSelector", "matchExpressions", "0"},
}

// realShaped is an object with every field the readers use, in the shape the hub serves.
const realShaped = `{"apiVersion":"v1","kind":"X","metadata":{"name":"n","namespace":"ns","uid":"u",
"labels":{"agentMachineRef":"","infraenvs.agent-install.openshift.io":"ie"},
"annotations":{"hypershift.openshift.io/nodePool":"clusters/workers"},
"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","name":"m","uid":"mu"}]},
"spec":{"approved":true,"hostname":"w1","role":"worker","clusterDeploymentName":{"name":"","namespace":""},
"agentLabelSelector":{"matchLabels":{"pool":"p"},"matchExpressions":[{"key":"k","operator":"In","values":["v"]}]},
"replicas":3,"platform":{"agent":{"agentLabelSelector":{"matchLabels":{"pool":"p"}}}}},
"status":{"conditions":[{"type":"AgentReserved","status":"False","reason":"NoSuitableAgents","severity":"Info","lastTransitionTime":"2026-01-01T00:00:00Z"},
{"type":"Ready","status":"False","reason":"NoSuitableAgents"},{"type":"Connected","status":"True"},{"type":"Validated","status":"True"},
{"type":"Bound","status":"False"},{"type":"Installed","status":"True","reason":"InstallationCompleted"}],
"inventory":{"interfaces":[{"macAddress":"00:50:56:AA:BB:CC"}],"systemVendor":{"serialNumber":"VMware-42 1e 5c 8f 2d 3a 4b 5c-9d 8e 7f 6a 5b 4c 3d 2e"}},
"agentRef":{"name":""},"phase":"Running","nodeRef":{"name":"node"},"isoDownloadURL":"https://h/x.iso","createdTime":"2026-01-01T00:00:00Z"}}`

// plant sets v at p inside obj, replacing whatever is on the way; a numeric segment indexes a list.
func plant(obj map[string]any, p []string, v any) {
	var cur any = obj
	for i, seg := range p {
		last := i == len(p)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[seg] = v
				return
			}
			next, ok := c[seg]
			if _, isMap := next.(map[string]any); !ok || (!isMap && !isList(next)) {
				next = map[string]any{}
				c[seg] = next
			}
			cur = next
		case []any:
			var idx int
			_, _ = fmt.Sscan(seg, &idx) // a segment that is not a number indexes 0
			if idx >= len(c) {
				return
			}
			if last {
				c[idx] = v
				return
			}
			if _, isMap := c[idx].(map[string]any); !isMap && !isList(c[idx]) {
				c[idx] = map[string]any{}
			}
			cur = c[idx]
		default:
			return
		}
	}
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// rawConditions reads status.conditions independently of the reader under test.
func rawConditions(obj map[string]any) ([]map[string]any, bool) {
	st, ok := obj["status"].(map[string]any)
	if !ok {
		return nil, false
	}
	list, ok := st["conditions"].([]any)
	if !ok {
		return nil, false
	}
	var out []map[string]any
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, true
}

func rawFirst(conds []map[string]any, condType string) (map[string]any, bool) {
	for _, c := range conds {
		if str(c, "type") == condType {
			return c, true
		}
	}
	return nil, false
}

// FuzzExternalObjectReaders feeds the readers of external objects (Agent, AgentMachine, Machine,
// InfraEnv, NodePool views and their condition helpers) unstructured input of any shape: a JSON
// document as the whole object, and the same value planted at each field the readers look at inside a
// real-shaped object. None may panic, and what they report agrees with the raw map:
//
//   - Conditions has one entry per map in status.conditions (none when it is not a list), with type,
//     status, reason and message copied when they are strings and empty otherwise;
//   - WaitsForAgent is true exactly when there is no status.agentRef.name string, no deletion
//     timestamp, and the first AgentReserved or Ready condition is False with reason NoSuitableAgents;
//   - IsSuitable implies spec.approved is the boolean true, spec.hostname a string other than "" and
//     "localhost", Connected and Validated True, and the Agent neither reserved nor Bound=True;
//   - IsInstalled is the first Installed condition's status == "True".
func FuzzExternalObjectReaders(f *testing.F) {
	f.Add([]byte(realShaped), uint8(0))
	f.Add([]byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"NoSuitableAgents"}]}}`), uint8(0))
	f.Add([]byte(`"string where a list belongs"`), uint8(0))
	f.Add([]byte(`[1, "x", null, {"type": 7}, {"type":"Ready","status":true}]`), uint8(0))
	f.Add([]byte(`{"type":"AgentReserved","status":"False","reason":"NoSuitableAgents"}`), uint8(1))
	f.Add([]byte(`null`), uint8(4))
	f.Add([]byte(`{"matchExpressions":[{"key":"k","operator":"Bogus"}],"matchLabels":{"a":1}}`), uint8(21))
	f.Add([]byte(`[{"key":"","operator":"In","values":[1,2]}]`), uint8(22))
	f.Add([]byte(`3.5`), uint8(28))
	f.Add([]byte(`"2026-13-45T99:99:99Z"`), uint8(27))
	f.Add([]byte(`{"name":7}`), uint8(20))
	f.Add([]byte(`[{"kind":"Machine"},"x"]`), uint8(10))
	f.Add([]byte(`"not-a-time"`), uint8(9))
	f.Add([]byte(`{"a":{"b":[[[]]]}}`), uint8(16))
	f.Fuzz(func(t *testing.T, doc []byte, where uint8) {
		var planted any
		if err := json.Unmarshal(doc, &planted); err != nil {
			planted = string(doc)
		}
		objs := []map[string]any{}
		if m, ok := planted.(map[string]any); ok {
			objs = append(objs, m)
		}
		var base map[string]any
		if err := json.Unmarshal([]byte(realShaped), &base); err != nil {
			t.Fatal(err)
		}
		plant(base, readerPaths[int(where)%len(readerPaths)], planted)
		objs = append(objs, base)
		for _, obj := range objs {
			checkReaders(t, obj)
		}
	})
}

func checkReaders(t *testing.T, obj map[string]any) {
	u := &unstructured.Unstructured{Object: obj}
	conds := Conditions(u)
	raw, isList := rawConditions(obj)
	if !isList && conds != nil {
		t.Fatalf("conditions %v read from a status.conditions that is not a list", conds)
	}
	if len(conds) != len(raw) {
		t.Fatalf("%d conditions read, %d maps in status.conditions", len(conds), len(raw))
	}
	for i, c := range conds {
		r := raw[i]
		if c.Type != str(r, "type") || c.Status != str(r, "status") || c.Reason != str(r, "reason") || c.Message != str(r, "message") {
			t.Fatalf("condition %d read as %+v from %v", i, c, r)
		}
	}
	for _, ty := range []string{"Ready", "Installed", "Bound", ""} {
		c, found := FindCondition(conds, ty)
		r, rfound := rawFirst(raw, ty)
		if found != rfound || (found && c.Status != str(r, "status")) {
			t.Fatalf("FindCondition(%q) = %+v/%t, raw %v/%t", ty, c, found, r, rfound)
		}
		if IsTrue(conds, ty) != (rfound && str(r, "status") == "True") {
			t.Fatalf("IsTrue(%q) disagrees with %v", ty, r)
		}
	}

	a := AgentFrom(u)
	_ = a.IsBound()
	_ = a.MatchesLabels(map[string]string{"pool": "p"})
	_ = a.HasMAC("00:50:56:aa:bb:cc")
	_ = a.IsHostOf("00:50:56:aa:bb:cc", "421e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e")
	if a.IsInstalled() {
		if r, ok := rawFirst(raw, "Installed"); !ok || str(r, "status") != "True" {
			t.Fatalf("IsInstalled without Installed=True first: %v", raw)
		}
	}
	if a.IsSuitable() {
		spec, _ := obj["spec"].(map[string]any)
		approved, _ := spec["approved"].(bool)
		host := str(spec, "hostname")
		conn, _ := rawFirst(raw, "Connected")
		val, _ := rawFirst(raw, "Validated")
		bound, _ := rawFirst(raw, "Bound")
		if !approved || host == "" || host == "localhost" || str(conn, "status") != "True" || str(val, "status") != "True" ||
			str(bound, "status") == "True" || a.AgentMachineRef() != "" || a.Deleting {
			t.Fatalf("IsSuitable on %v", obj)
		}
	}

	am := AgentMachineFrom(u)
	_ = am.IsReady()
	if am.Selector != nil {
		_ = am.Selector.String()
	}
	agentRef := ""
	if st, ok := obj["status"].(map[string]any); ok {
		if ref, ok := st["agentRef"].(map[string]any); ok {
			agentRef = str(ref, "name")
		}
	}
	wantWait := false
	if agentRef == "" && u.GetDeletionTimestamp() == nil {
		for _, ty := range []string{"AgentReserved", "Ready"} {
			if r, ok := rawFirst(raw, ty); ok && str(r, "status") == "False" && str(r, "reason") == ProviderReasonNoSuitableAgents {
				wantWait = true
			}
		}
	}
	if am.WaitsForAgent() != wantWait {
		t.Fatalf("WaitsForAgent = %t, want %t (agentRef %q, conditions %v)", am.WaitsForAgent(), wantWait, agentRef, raw)
	}

	m := MachineFrom(u)
	if m.Deleting != (m.DeletionTime != nil) {
		t.Fatalf("Machine deleting %t with deletion time %v", m.Deleting, m.DeletionTime)
	}
	ie := InfraEnvFrom(u)
	_ = ie.ISODownloadURL
	np := NodePoolFrom(u)
	if np.AgentSelector != nil {
		_, _ = np.AgentSelector.Marshal()
	}
}
