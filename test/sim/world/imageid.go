package world

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/soap"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim"
)

// The image decides the InfraEnv: assisted-service registers a host with the InfraEnv whose discovery
// image it booted (the image carries the InfraEnv's ID and pull secret), never by where the VM sits or
// what the file is called. The world reads the ISO file's bytes from the datastore and compares their
// SHA-256 with every image the InfraEnvs in scope have had (current and earlier).

// isoReadTimeout bounds reading one ISO file from a datastore.
const isoReadTimeout = 30 * time.Second

// isoContent returns the SHA-256 of the ISO at a datastore path ("[ds] dir/file.iso"), read through the
// datastore's file service (cached by path: a datastore file the operator uploaded is not rewritten).
// ok is false when the file cannot be read (a host cannot boot it either).
func (d *Driver) isoContent(ctx context.Context, path string) (string, bool) {
	d.stateMu.Lock()
	sum, cached := d.isoSHAs[path]
	d.stateMu.Unlock()
	if cached {
		return sum, true
	}
	var p object.DatastorePath
	if !p.FromString(path) {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, isoReadTimeout) // every remote call has a deadline
	defer cancel()
	finder := find.NewFinder(d.vc, false)
	dc, err := finder.DatacenterOrDefault(ctx, d.opts.Datacenter)
	if err != nil {
		d.log.V(1).Info("cannot read ISO: no datacenter", "path", path, "err", err.Error())
		return "", false
	}
	finder.SetDatacenter(dc)
	ds, err := finder.Datastore(ctx, p.Datastore)
	if err != nil {
		d.log.V(1).Info("cannot read ISO: no datastore", "path", path, "err", err.Error())
		return "", false
	}
	rc, _, err := ds.Download(ctx, p.Path, &soap.DefaultDownload)
	if err != nil {
		d.log.V(1).Info("cannot read ISO", "path", path, "err", err.Error())
		return "", false
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		return "", false
	}
	sum = hex.EncodeToString(h.Sum(nil))
	d.stateMu.Lock()
	d.isoSHAs[path] = sum
	d.stateMu.Unlock()
	return sum, true
}

// learnImages records, for each InfraEnv in scope, the images its image service has generated (by its
// isoDownloadURL) and the static addressing versions; an InfraEnv keeps its earlier images.
func (d *Driver) learnImages(ctx context.Context) error {
	ies, err := d.listInPass(ctx, InfraEnvGVK)
	if err != nil {
		return err
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	for _, ie := range ies {
		key := client.ObjectKeyFromObject(ie)
		set := d.images[key]
		if set == nil {
			set = map[string]bool{}
			d.images[key] = set
		}
		u, _, _ := unstructured.NestedString(ie.Object, "status", "isoDownloadURL")
		if shas, ok := sim.ImagesAt(u); ok {
			for _, s := range shas {
				set[s] = true
			}
		}
		if o := d.opts.StaticIP; o != nil && o.InfraEnv == key {
			for _, v := range d.static.versions {
				set[v.SHA256] = true
			}
		}
	}
	return nil
}

// infraEnvFor decides the InfraEnv a booted VM registers with: the one (narrowed by InfraEnvFor or
// InfraEnv) that generated the image it boots. ok is false for an empty drive, an unreadable file, or
// an image of no InfraEnv in scope (recorded in ForeignBoots).
func (d *Driver) infraEnvFor(ctx context.Context, vm *VM) (types.NamespacedName, bool) {
	if vm.ISOPath == "" {
		return types.NamespacedName{}, false
	}
	var want *types.NamespacedName
	switch {
	case d.opts.InfraEnvFor != nil:
		k, ok := d.opts.InfraEnvFor(*vm)
		if !ok {
			return types.NamespacedName{}, false
		}
		want = &k
	case d.opts.InfraEnv != nil:
		want = d.opts.InfraEnv
	}
	sum, ok := d.isoContent(ctx, vm.ISOPath)
	if !ok {
		// Not a readable datastore file (e.g. a backing fileName without "[datastore]"): nothing boots.
		d.stateMu.Lock()
		if d.foreign[vm.Name] == "" {
			d.log.Info("VM not registered: its CD-ROM file cannot be read as a datastore path", "vm", vm.Name, "iso", vm.ISOPath)
		}
		d.foreign[vm.Name] = fmt.Sprintf("booted %q: not a readable datastore file", vm.ISOPath)
		d.stateMu.Unlock()
		return types.NamespacedName{}, false
	}
	vm.ISOSHA256 = sum
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	var matches []types.NamespacedName
	for k, set := range d.images {
		if set[sum] && (want == nil || *want == k) {
			matches = append(matches, k)
		}
	}
	if len(matches) != 1 {
		what := "an image no InfraEnv in scope generated"
		if len(matches) > 1 {
			what = fmt.Sprintf("an image %d InfraEnvs share", len(matches))
		}
		if d.foreign[vm.Name] == "" {
			d.log.Info("VM not registered: it boots "+what, "vm", vm.Name, "iso", vm.ISOPath)
		}
		d.foreign[vm.Name] = fmt.Sprintf("booted %s (sha256 %s): %s", vm.ISOPath, sum, what)
		return types.NamespacedName{}, false
	}
	delete(d.foreign, vm.Name)
	return matches[0], true
}

// bootsDiscovery reports whether a VM's next boot starts a discovery image of an InfraEnv in scope:
// the CD-ROM holds one and the firmware tries it before the disks.
func (d *Driver) bootsDiscovery(ctx context.Context, vm VM) bool {
	if vm.ISOPath == "" || !vm.CDROMBootsFirst {
		return false
	}
	sum, ok := d.isoContent(ctx, vm.ISOPath)
	if !ok {
		return false
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	for _, set := range d.images {
		if set[sum] {
			return true
		}
	}
	return false
}

// ForeignBoots lists the powered-on VMs that boot an ISO no InfraEnv in scope generated, or a CD-ROM
// file that cannot be read (VM name -> what it booted): assisted-service never hears of them.
func (d *Driver) ForeignBoots() map[string]string {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return maps.Clone(d.foreign)
}

// isoBase is a datastore path's file name without the ".iso" suffix.
func isoBase(path string) string {
	if i := strings.Index(path, "]"); i >= 0 {
		path = strings.TrimSpace(path[i+1:])
	}
	if i := strings.LastIndex(path, "/"); i >= 0 {
		path = path[i+1:]
	}
	return strings.TrimSuffix(path, ".iso")
}
