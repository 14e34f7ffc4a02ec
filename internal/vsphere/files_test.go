package vsphere_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func TestISOFiles(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	const dir = "[LocalDS_0] agent-forge/ns/pool"
	payload := bytes.Repeat([]byte{0xAB}, 64<<10)

	// Unknown size streams chunked; the folder is created on the way.
	if err := h.client.UploadISO(ctx, vcsim.Datacenter, dir+"/aaaa.iso", bytes.NewReader(payload), -1); err != nil {
		t.Fatalf("upload: %v", err)
	}
	if err := h.client.UploadISO(ctx, vcsim.Datacenter, dir+"/bbbb.iso", bytes.NewReader(payload[:10]), 10); err != nil {
		t.Fatalf("upload: %v", err)
	}
	fi, err := h.client.StatFile(ctx, vcsim.Datacenter, dir+"/aaaa.iso")
	if err != nil || fi.SizeBytes != int64(len(payload)) || fi.Name != "aaaa.iso" || fi.Path != dir+"/aaaa.iso" {
		t.Fatalf("stat = %+v, %v", fi, err)
	}
	files, err := h.client.ListFiles(ctx, vcsim.Datacenter, dir)
	if err != nil || len(files) != 2 || files[0].Name != "aaaa.iso" || files[1].Name != "bbbb.iso" {
		t.Fatalf("list = %+v, %v (no temporary names may remain)", files, err)
	}
	if empty, err := h.client.ListFiles(ctx, vcsim.Datacenter, "[LocalDS_0] no/such/dir"); err != nil || len(empty) != 0 {
		t.Fatalf("absent folder lists %+v, %v", empty, err)
	}

	// Replacing a file is a rename over it.
	if err := h.client.UploadISO(ctx, vcsim.Datacenter, dir+"/bbbb.iso", bytes.NewReader(payload[:20]), 20); err != nil {
		t.Fatalf("re-upload: %v", err)
	}
	if fi, err := h.client.StatFile(ctx, vcsim.Datacenter, dir+"/bbbb.iso"); err != nil || fi.SizeBytes != 20 {
		t.Fatalf("after replace: %+v, %v", fi, err)
	}

	if err := h.client.DeleteFile(ctx, vcsim.Datacenter, dir+"/aaaa.iso"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := h.client.DeleteFile(ctx, vcsim.Datacenter, dir+"/aaaa.iso"); err != nil {
		t.Fatalf("delete of an absent file: %v", err)
	}
	_, err = h.client.StatFile(ctx, vcsim.Datacenter, dir+"/aaaa.iso")
	wantClass(t, err, vsphere.ClassNotFound)

	_, err = h.client.StatFile(ctx, vcsim.Datacenter, "not a datastore path")
	wantClass(t, err, vsphere.ClassInvalid)
}

// failingReader returns n bytes, then an error: a download that broke mid-way.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("source connection reset")
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

func TestInterruptedUploadLeavesNoFinalFile(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	const dir = "[LocalDS_0] agent-forge/ns/pool"
	for _, size := range []int64{-1, 1 << 20} {
		err := h.client.UploadISO(ctx, vcsim.Datacenter, dir+"/cccc.iso", io.Reader(&failingReader{n: 256 << 10}), size)
		if err == nil {
			t.Fatalf("size %d: interrupted upload reported success", size)
		}
		if _, err := h.client.StatFile(ctx, vcsim.Datacenter, dir+"/cccc.iso"); !vsphere.IsNotFound(err) {
			t.Fatalf("size %d: final name exists after a failed upload (%v)", size, err)
		}
		// The client deletes its temporary file at once, but the server may still be handling the
		// aborted request and (re)create it afterwards: the client cannot know when the server is done.
		// Such a leftover must carry a temporary name, which the ISO cache's Prune deletes once stale
		// (internal/iso scenarios). What must never appear is any other name.
		files, err := h.client.ListFiles(ctx, vcsim.Datacenter, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !vsphere.IsTempUploadName(f.Name) {
				t.Fatalf("size %d: unexpected file %s after a failed upload", size, f.Name)
			}
		}
	}
}

func TestFailedPromotionDeletesTheTemporaryUpload(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	const dir = "[LocalDS_0] agent-forge/ns/promote"
	// The body is complete (the server answered the PUT) before the rename fails, so the temporary
	// file is finished and the client's cleanup is deterministic here.
	h.env.Service().AddFaultRule(faultRule("MoveDatastoreFile_Task", &types.CannotAccessFile{}, 1))
	err := h.client.UploadISO(ctx, vcsim.Datacenter, dir+"/dddd.iso", bytes.NewReader(bytes.Repeat([]byte{1}, 64<<10)), 64<<10)
	if err == nil {
		t.Fatal("upload whose rename failed reported success")
	}
	files, err := h.client.ListFiles(ctx, vcsim.Datacenter, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 0 {
		t.Fatalf("files left after a failed promotion: %+v", files)
	}
}

func TestVMsWithISO(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	const other = "[LocalDS_0] agent-forge/ns/pool/ffff.iso"
	h.uploadISO(t, other)
	h.createVM(t, "with-iso-1", newOwner())
	second := h.createVM(t, "with-iso-2", newOwner())
	spec := h.env.VMSpec("with-other", newOwner())
	spec.ISOPath = other
	if _, err := h.client.CreateVM(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// A powered-off VM counts too (any state, any owner).
	admin, err := h.env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Logout(ctx) }()
	ref, err := object.NewSearchIndex(admin.Client).FindByUuid(ctx, nil, second.InstanceUUID, true, types.NewBool(true))
	if err != nil || ref == nil {
		t.Fatalf("find: %v", err)
	}
	task, err := object.NewVirtualMachine(admin.Client, ref.Reference()).PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}

	names, err := h.client.VMsWithISO(ctx, vcsim.Datacenter, isoPath)
	if err != nil || len(names) != 2 || names[0] != "with-iso-1" || names[1] != "with-iso-2" {
		t.Fatalf("VMsWithISO = %v, %v", names, err)
	}
	if names, err := h.client.VMsWithISO(ctx, vcsim.Datacenter, "[LocalDS_0] unused.iso"); err != nil || len(names) != 0 {
		t.Fatalf("unused ISO attached to %v, %v", names, err)
	}
}
