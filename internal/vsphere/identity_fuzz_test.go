package vsphere

import (
	"strings"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

var markerKeys = []string{ExtraConfigOwnerUID, ExtraConfigOwner, ExtraConfigPoolUID, ExtraConfigPool, "guestinfo.other", ExtraConfigDiskUUID}

// FuzzOwnershipMarker checks the ownership marker, the proof every destroy, reconfigure and eject
// verifies first (SPEC §4):
//
//   - round trip: the marker configSpec writes into a new VM's extraConfig reads back (ownershipOf)
//     as exactly the Ownership it was given, the instance UUID is the owner UID, and the VM read back
//     (toVMInfo) reports that marker and the CD-ROM's ISO path;
//   - on an arbitrary extraConfig (our keys repeated, foreign keys, non-string values) verifyOwnership
//     passes exactly when the wanted owner UID is non-empty and is the string value of the VM's
//     owner-UID entry, and, when a pool UID is wanted, the pool-UID entry holds it; a VM without a
//     marker, with an empty one, or with another owner's or pool's is always refused.
func FuzzOwnershipMarker(f *testing.F) {
	f.Add("3f1c2a9e-0d4b-4c55-9a7e-2b7d1c0e9f10", "clusters/workers-abc", "8e2d1b7c-5a3f-4e61-b0c9-7d6a5f4e3d2c", "clusters/workers",
		"[LocalDS_0] agent-forge/clusters/workers/"+strings.Repeat("ab", 32)+".iso", []byte{0, 1, 2, 3}, "3f1c2a9e-0d4b-4c55-9a7e-2b7d1c0e9f10", "")
	f.Add("uid", "n", "pool", "p", "", []byte{0, 0x80, 2, 2 | 0x80}, "uid", "pool")
	f.Add("", "", "", "", "", []byte{}, "", "")
	f.Add("a", "b", "c", "d", "[ds] x.iso", []byte{0, 0x40, 2}, "a", "c")
	f.Fuzz(func(t *testing.T, ownerUID, ownerName, poolUID, poolName, isoPath string, extra []byte, wantOwner, wantPool string) {
		own := Ownership{OwnerUID: ownerUID, OwnerName: ownerName, PoolUID: poolUID, PoolName: poolName}
		cfg, _, err := configSpec(VMSpec{Name: "vm", ISOPath: isoPath, Ownership: own}, []types.BaseVirtualDeviceBackingInfo{&types.VirtualEthernetCardNetworkBackingInfo{}}, "")
		if err != nil {
			t.Fatalf("configSpec: %v", err)
		}
		if got := ownershipOf(cfg.ExtraConfig); got != own {
			t.Fatalf("marker written as %+v reads back as %+v", own, got)
		}
		if cfg.InstanceUuid != ownerUID {
			t.Fatalf("instance UUID %q, owner UID %q", cfg.InstanceUuid, ownerUID)
		}
		var devices []types.BaseVirtualDevice
		for _, ch := range cfg.DeviceChange {
			devices = append(devices, ch.GetVirtualDeviceConfigSpec().Device)
		}
		vm := &mo.VirtualMachine{Config: &types.VirtualMachineConfigInfo{
			Name: "vm", InstanceUuid: cfg.InstanceUuid, ExtraConfig: cfg.ExtraConfig,
			Hardware: types.VirtualHardware{Device: devices},
		}}
		vm.Name = "vm"
		info := toVMInfo(vm)
		if info.Ownership != own || info.InstanceUUID != ownerUID {
			t.Fatalf("VM read back with marker %+v / instance UUID %q, created with %+v", info.Ownership, info.InstanceUUID, own)
		}
		if len(info.CDROMs) != 1 || info.CDROMs[0].ISOPath != isoPath {
			t.Fatalf("CD-ROMs read back %+v, created with ISO %q", info.CDROMs, isoPath)
		}
		if err := verifyOwnership("Test", "vm", info.Ownership, own); (err == nil) != (ownerUID != "") {
			t.Fatalf("verifyOwnership of the VM's own marker %+v: %v", own, err)
		}

		// Arbitrary extraConfig: each byte is one entry (low bits pick the key, 0x80 a non-string value,
		// 0x40 the wanted value instead of the created one).
		var ec []types.BaseOptionValue
		last := map[string]string{}
		for _, b := range extra {
			key := markerKeys[int(b&0x3f)%len(markerKeys)]
			var v any
			switch {
			case b&0x80 != 0:
				v = int32(b)
			case b&0x40 != 0 && key == ExtraConfigOwnerUID:
				v = wantOwner
			case b&0x40 != 0 && key == ExtraConfigPoolUID:
				v = wantPool
			case key == ExtraConfigOwnerUID:
				v = ownerUID
			case key == ExtraConfigPoolUID:
				v = poolUID
			default:
				v = ownerName
			}
			ec = append(ec, &types.OptionValue{Key: key, Value: v})
			s, _ := v.(string)
			last[key] = s
		}
		have := ownershipOf(ec)
		if have.OwnerUID != last[ExtraConfigOwnerUID] || have.PoolUID != last[ExtraConfigPoolUID] {
			t.Fatalf("ownershipOf(%v) = %+v, want owner %q pool %q", extra, have, last[ExtraConfigOwnerUID], last[ExtraConfigPoolUID])
		}
		want := Ownership{OwnerUID: wantOwner, PoolUID: wantPool}
		ok := wantOwner != "" && last[ExtraConfigOwnerUID] == wantOwner && (wantPool == "" || last[ExtraConfigPoolUID] == wantPool)
		err = verifyOwnership("Test", "vm", have, want)
		if (err == nil) != ok {
			t.Fatalf("verifyOwnership(have %+v, want %+v) = %v, want ok=%t", have, want, err, ok)
		}
		if err != nil && ClassOf(err) != ClassOwnership {
			t.Fatalf("refusal classified %v, want %v", ClassOf(err), ClassOwnership)
		}
	})
}

// FuzzDatastorePath checks the datastore-path helpers the ISO cache and the "which VMs still have
// this ISO" check (the guard before pruning) rely on:
//
//   - parseDatastorePath round-trips "[ds] dir/file" for any datastore name without ']' and any path
//     without surrounding blanks, and refuses "" and a missing datastore;
//   - sameDatastorePath says "same" exactly when datastore and path are equal, whether or not either
//     side omits the blank after ']' (as some vCenter answers do); it is symmetric.
func FuzzDatastorePath(f *testing.F) {
	f.Add("LocalDS_0", "agent-forge/clusters/workers/"+strings.Repeat("ab", 32)+".iso", "LocalDS_0", "agent-forge/clusters/workers/"+strings.Repeat("ab", 32)+".iso", uint8(1))
	f.Add("datastore 1", "a/b.iso", "datastore 1", "a/c.iso", uint8(0))
	f.Add("ds", "x.iso", "ds2", "x.iso", uint8(2))
	f.Add("", "x.iso", "", "x.iso", uint8(3))
	f.Add("ds", "a] b.iso", "ds", "a]b.iso", uint8(3))
	f.Fuzz(func(t *testing.T, ds, p, ds2, p2 string, style uint8) {
		if strings.Contains(ds, "]") || strings.Contains(ds2, "]") || strings.TrimSpace(p) != p || strings.TrimSpace(p2) != p2 ||
			strings.TrimSpace(ds) != ds || strings.TrimSpace(ds2) != ds2 {
			return
		}
		a, b := "["+ds+"] "+p, "["+ds2+"] "+p2
		if style&1 != 0 {
			a = "[" + ds + "]" + p
		}
		if style&2 != 0 {
			b = "[" + ds2 + "]" + p2
		}
		dp, err := parseDatastorePath("Test", a)
		switch {
		case ds == "" && err == nil:
			t.Fatalf("parseDatastorePath(%q) accepted a path without a datastore", a)
		case ds != "" && err != nil:
			t.Fatalf("parseDatastorePath(%q): %v", a, err)
		case ds != "" && (dp.Datastore != ds || dp.Path != p):
			t.Fatalf("parseDatastorePath(%q) = [%s] %s", a, dp.Datastore, dp.Path)
		}
		// Only paths that parse as [ds] path name a file; compare those.
		if ds == "" || ds2 == "" {
			return
		}
		same := sameDatastorePath(a, b)
		if same != sameDatastorePath(b, a) {
			t.Fatalf("sameDatastorePath not symmetric on %q, %q", a, b)
		}
		if want := ds == ds2 && p == p2; same != want {
			t.Fatalf("sameDatastorePath(%q, %q) = %t, want %t", a, b, same, want)
		}
	})
}

// FuzzChooseLockAnswer checks the answer to a VM question (a vCenter object of any content): a key is
// returned only for the CD-ROM lock question (msg.cdromdisconnect.locked) and only the non-empty key of
// a choice meaning "Yes" (label button.yes, or summary or label "Yes", any case, blanks trimmed); any
// other question, or one without such a choice, is refused (ClassRefused) and never answered; when the
// lock question offers a "Yes" choice, it is answered.
func FuzzChooseLockAnswer(f *testing.F) {
	f.Add(CDROMLockedMessageID, "0\x1fbutton.yes\x1fYes\x1e1\x1fbutton.no\x1fNo")
	f.Add(CDROMLockedMessageID, "1\x1fbutton.no\x1fNo\x1e0\x1f\x1f yes ")
	f.Add(CDROMLockedMessageID, "2\x1fbutton.ok\x1fOK\x1e3\x1fbutton.cancel\x1fCancel")
	f.Add("msg.uuid.altered", "0\x1fbutton.yes\x1fYes")
	f.Add(CDROMLockedMessageID, "\x1fbutton.yes\x1fYes\x1e5\x1fYES\x1f")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, messageID, choices string) {
		q := &Question{ID: "q-1", MessageID: messageID, Text: "The guest operating system has locked the CD-ROM door"}
		for _, c := range strings.Split(choices, "\x1e") {
			parts := strings.SplitN(c, "\x1f", 3)
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			q.Choices = append(q.Choices, Choice{Key: parts[0], Label: parts[1], Summary: parts[2]})
		}
		isYes := func(c Choice) bool {
			l, s := strings.ToLower(strings.TrimSpace(c.Label)), strings.ToLower(strings.TrimSpace(c.Summary))
			return c.Key != "" && (l == "button.yes" || s == "yes" || l == "yes")
		}
		anyYes := false
		for _, c := range q.Choices {
			anyYes = anyYes || isYes(c)
		}
		key, err := ChooseLockAnswer(q)
		if err != nil {
			if ClassOf(err) != ClassRefused {
				t.Fatalf("refusal classified %v", ClassOf(err))
			}
			if messageID == CDROMLockedMessageID && anyYes {
				t.Fatalf("lock question with a Yes choice not answered: %+v: %v", q.Choices, err)
			}
			return
		}
		if messageID != CDROMLockedMessageID {
			t.Fatalf("answered question %q (not the lock question) with %q", messageID, key)
		}
		ok := false
		for _, c := range q.Choices {
			if c.Key == key && isYes(c) {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("answered %q, which is not the key of a Yes choice in %+v", key, q.Choices)
		}
		if _, err := ChooseLockAnswer(nil); err == nil {
			t.Fatal("answered a nil question")
		}
	})
}
