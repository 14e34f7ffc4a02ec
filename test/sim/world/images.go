package world

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// NMStateConfigGVK is assisted-service's static network configuration of a host.
var NMStateConfigGVK = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "NMStateConfig"}

// ImageService is the discovery image server whose content the world regenerates (sim.ISOServer).
type ImageService interface {
	SetContent(seed uint64, size int64)
	SHA256() string
	Size() int64
}

// StaticIPOptions make the world play static addressing: assisted-service regenerating one InfraEnv's
// discovery image whenever the set of NMStateConfigs its spec.nmStateConfigLabelSelector selects changes
// (each version embeds the MAC -> address of the configs it saw), hosts that register only when the image
// they booted carries their MAC's config (no DHCP: otherwise they never get an address), and an IPAM
// provider serving Pools.
type StaticIPOptions struct {
	InfraEnv types.NamespacedName
	Images   ImageService
	Pools    []IPPool
}

// ImageVersion is one generated discovery image.
type ImageVersion struct {
	Number      int
	SHA256      string
	CreatedTime time.Time
	// Addresses maps each embedded config's MAC (lower case) to its address "ip/prefix".
	Addresses map[string]string
	// NICs maps the MAC (lower case) of every interface of the embedded configs to its addresses.
	NICs map[string]NICAddresses
}

// NICAddresses are the static addresses ("ip/prefix") an NMStateConfig gives one interface.
type NICAddresses struct {
	IPv4, IPv6 []string
}

// staticWorld is the driver's static addressing state (guarded by Driver.stateMu).
type staticWorld struct {
	versions    []ImageVersion
	bySHA       map[string]int
	fingerprint string
	// bootedWithout records VMs that booted an image without their config (name -> what happened).
	bootedWithout map[string]string
	// reported is the address each registered host (by BIOS UUID, lower case) reports.
	reported map[string]string
	// reportedNICs are the addresses of each registered host's interfaces (BIOS UUID -> MAC -> addresses).
	reportedNICs map[string]map[string]NICAddresses
	// failing, when set, is the message of a failing image generation (FailImageGeneration).
	failing string
	// url is the last published isoDownloadURL (a failed generation clears it on the InfraEnv).
	url string
}

// regenerateImages plays assisted-service: when the selected NMStateConfigs change, a new image is
// generated (new bytes, status.createdTime moves). Generation takes time: an image is stamped only once
// the second of the newest config has passed, so its createdTime is strictly after every config it
// embeds and never after one it misses (second-resolution timestamps).
func (d *Driver) regenerateImages(ctx context.Context) error {
	o := d.opts.StaticIP
	if o == nil || o.Images == nil {
		return nil
	}
	ie := newObject(InfraEnvGVK)
	if err := d.c.Get(ctx, o.InfraEnv, ie); err != nil {
		return client.IgnoreNotFound(err)
	}
	d.stateMu.Lock()
	if len(d.static.versions) == 0 {
		created, _, _ := unstructured.NestedString(ie.Object, "status", "createdTime")
		t, _ := time.Parse(time.RFC3339, created)
		d.recordVersion(ImageVersion{SHA256: o.Images.SHA256(), CreatedTime: t, Addresses: map[string]string{}, NICs: map[string]NICAddresses{}})
	}
	d.stateMu.Unlock()
	sel, _, _ := unstructured.NestedStringMap(ie.Object, "spec", "nmStateConfigLabelSelector", "matchLabels")
	if len(sel) == 0 {
		return nil
	}
	l := newList(NMStateConfigGVK)
	if err := d.c.List(ctx, l, client.InNamespace(o.InfraEnv.Namespace), client.MatchingLabels(sel)); err != nil {
		return err
	}
	var keys []string
	var newest time.Time
	addresses := map[string]string{}
	nics := map[string]NICAddresses{}
	for i := range l.Items {
		c := &l.Items[i]
		if c.GetDeletionTimestamp() != nil {
			continue
		}
		// The image embeds the selected configs' content: a new config, a removed one or an edited one
		// (same name, other UID or spec) makes a new image, a label edit that keeps it selected does not.
		spec, _ := json.Marshal(c.Object["spec"])
		keys = append(keys, fmt.Sprintf("%s/%s/%x", c.GetName(), c.GetUID(), sha256.Sum256(spec)))
		if t := lastChange(c); t.After(newest) {
			newest = t
		}
		mac, addr := configAddress(c)
		if mac != "" {
			addresses[mac] = addr
		}
		for m, a := range configNICs(c) {
			nics[m] = a
		}
	}
	// Any InfraEnv spec change (the selector among them) regenerates the image too.
	keys = append(keys, fmt.Sprintf("infraenv-generation=%d", ie.GetGeneration()))
	if t := lastChange(ie); t.After(newest) {
		newest = t
	}
	sort.Strings(keys)
	fp := strings.Join(keys, ",")
	d.stateMu.Lock()
	st := d.static
	known, last, next, failing := fp == st.fingerprint, st.versions[len(st.versions)-1].CreatedTime, len(st.versions), st.failing
	if !known && st.fingerprint == "" && len(l.Items) == 0 {
		st.fingerprint, known = fp, true // the first look, no config yet: the published image is current
	}
	url, _, _ := unstructured.NestedString(ie.Object, "status", "isoDownloadURL")
	if url != "" {
		st.url = url
	}
	url = st.url
	d.stateMu.Unlock()
	if known {
		return nil
	}
	if failing != "" {
		// assisted-service failing to generate: the URL is cleared and ImageCreated=False; the next
		// image is generated once generation works again.
		if !unstructuredcond.IsFalse(ie, CondImageCreated) {
			if err := SetInfraEnvImageError(ctx, d.c, o.InfraEnv, failing); err != nil {
				return err
			}
			d.wrote()
		}
		return nil
	}
	now := d.now().UTC().Truncate(time.Second)
	if !now.After(newest.Truncate(time.Second)) || !now.After(last) {
		return nil // still generating: the next pass stamps it
	}
	o.Images.SetContent(uint64(7000+next), o.Images.Size()) // the bytes first: a download for the new createdTime gets them
	if err := SetInfraEnvImage(ctx, d.c, o.InfraEnv, url, now); err != nil {
		return fmt.Errorf("publishing regenerated image: %w", err)
	}
	d.wrote()
	d.stateMu.Lock()
	st.fingerprint = fp
	d.recordVersion(ImageVersion{SHA256: o.Images.SHA256(), CreatedTime: now, Addresses: addresses, NICs: nics})
	d.stateMu.Unlock()
	d.log.Info("discovery image regenerated", "infraEnv", o.InfraEnv, "version", next, "configs", len(keys))
	return nil
}

// lastChange is when an object's metadata or spec was last written: its creation or the newest
// managedFields entry outside the status subresource (the API server stamps both, to the second).
func lastChange(o *unstructured.Unstructured) time.Time {
	t := o.GetCreationTimestamp().Time
	for _, mf := range o.GetManagedFields() {
		if mf.Subresource == "" && mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

// FailImageGeneration makes assisted-service fail to generate the next images with message (""
// lets it generate again): the URL is cleared and ImageCreated=False until then.
func (d *Driver) FailImageGeneration(message string) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.static.failing = message
}

// recordVersion adds an image version; the caller holds stateMu.
func (d *Driver) recordVersion(v ImageVersion) {
	st := d.static
	v.Number = len(st.versions)
	st.versions = append(st.versions, v)
	st.bySHA[v.SHA256] = v.Number
}

// configAddress reads the MAC of an NMStateConfig's interface and the first IPv4 address its nmstate
// document gives that interface.
func configAddress(c *unstructured.Unstructured) (mac, address string) {
	ifaces, _, _ := unstructured.NestedSlice(c.Object, "spec", "interfaces")
	if len(ifaces) == 0 {
		return "", ""
	}
	m, _ := ifaces[0].(map[string]any)
	mac = strings.ToLower(fmt.Sprint(m["macAddress"]))
	name := fmt.Sprint(m["name"])
	docIfaces, _, _ := unstructured.NestedSlice(c.Object, "spec", "config", "interfaces")
	for _, di := range docIfaces {
		dm, _ := di.(map[string]any)
		if fmt.Sprint(dm["name"]) != name {
			continue
		}
		addrs, _, _ := unstructured.NestedSlice(dm, "ipv4", "address")
		if len(addrs) > 0 {
			a, _ := addrs[0].(map[string]any)
			return mac, fmt.Sprintf("%v/%v", a["ip"], a["prefix-length"])
		}
	}
	return mac, ""
}

// configNICs reads every interface of an NMStateConfig as assisted-service does: spec.interfaces maps
// each name spec.config uses to the host NIC's MAC; that interface's ipv4/ipv6 addresses of spec.config
// are what the host gets on the NIC.
func configNICs(c *unstructured.Unstructured) map[string]NICAddresses {
	ifaces, _, _ := unstructured.NestedSlice(c.Object, "spec", "interfaces")
	docIfaces, _, _ := unstructured.NestedSlice(c.Object, "spec", "config", "interfaces")
	out := map[string]NICAddresses{}
	for _, i := range ifaces {
		m, _ := i.(map[string]any)
		mac, name := strings.ToLower(fmt.Sprint(m["macAddress"])), fmt.Sprint(m["name"])
		var a NICAddresses
		for _, di := range docIfaces {
			dm, _ := di.(map[string]any)
			if fmt.Sprint(dm["name"]) != name {
				continue
			}
			a.IPv4, a.IPv6 = nmstateAddresses(dm, "ipv4"), nmstateAddresses(dm, "ipv6")
		}
		out[mac] = a
	}
	return out
}

// nmstateAddresses lists the static addresses of one family of an nmstate interface ("ip/prefix"),
// none when the family is disabled.
func nmstateAddresses(iface map[string]any, family string) []string {
	if enabled, _, _ := unstructured.NestedBool(iface, family, "enabled"); !enabled {
		return nil
	}
	addrs, _, _ := unstructured.NestedSlice(iface, family, "address")
	var out []string
	for _, a := range addrs {
		m, _ := a.(map[string]any)
		out = append(out, fmt.Sprintf("%v/%v", m["ip"], m["prefix-length"]))
	}
	return out
}

// staticAddressFor decides whether a booted host gets an address: its ISO's content (SHA-256) is an
// image version that embeds its MAC's config. ok is false when it does not (the
// host never registers; recorded as a violation of the ordering rule). Without StaticIP: "", true.
func (d *Driver) staticAddressFor(vm VM) (string, bool) {
	if d.opts.StaticIP == nil || d.opts.StaticIP.Images == nil {
		return "", true
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	st := d.static
	sha := vm.ISOSHA256 // the content the host boots (infraEnvFor read it)
	if sha == "" {
		sha = isoBase(vm.ISOPath)
	}
	n, known := st.bySHA[sha]
	if !known {
		st.bootedWithout[vm.Name] = "booted " + vm.ISOPath + ", not a discovery image version the world generated"
		return "", false
	}
	addr, ok := st.versions[n].Addresses[strings.ToLower(vm.MAC)]
	if !ok {
		st.bootedWithout[vm.Name] = fmt.Sprintf("booted image version %d, which has no NMStateConfig for MAC %s", n, vm.MAC)
		return "", false
	}
	st.reported[strings.ToLower(vm.BIOSUUID)] = addr
	byMAC := map[string]NICAddresses{}
	for _, m := range vm.MACs {
		if a, ok := st.versions[n].NICs[m]; ok {
			byMAC[m] = a
		}
	}
	st.reportedNICs[strings.ToLower(vm.BIOSUUID)] = byMAC
	return addr, true
}

// reportedNIC is the inventory's ipV4Addresses and ipV6Addresses of the host's NIC with mac (the first
// NIC's IPv4 as reportedIPv4 says when its config gives it one).
func (d *Driver) reportedNIC(vm VM, mac string) (v4, v6 []any) {
	d.stateMu.Lock()
	a := d.static.reportedNICs[strings.ToLower(vm.BIOSUUID)][mac]
	d.stateMu.Unlock()
	v4, v6 = []any{}, []any{}
	if mac == strings.ToLower(vm.MAC) {
		v4 = d.reportedIPv4(vm)
	} else {
		for _, ip := range a.IPv4 {
			v4 = append(v4, ip)
		}
	}
	for _, ip := range a.IPv6 {
		v6 = append(v6, ip)
	}
	return v4, v6
}

// reportedIPv4 is the inventory's ipV4Addresses of a host.
func (d *Driver) reportedIPv4(vm VM) []any {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if a := d.static.reported[strings.ToLower(vm.BIOSUUID)]; a != "" {
		return []any{a}
	}
	return []any{}
}

// ImageRegenerations counts the images generated after the first (one per change of the selected set).
func (d *Driver) ImageRegenerations() int {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if len(d.static.versions) == 0 {
		return 0
	}
	return len(d.static.versions) - 1
}

// ImageVersions returns the generated image versions, oldest first.
func (d *Driver) ImageVersions() []ImageVersion {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return append([]ImageVersion(nil), d.static.versions...)
}

// BootedWithoutConfig lists the VMs that booted an image without their network configuration (VM name
// -> what happened): each is a broken ordering rule.
func (d *Driver) BootedWithoutConfig() map[string]string {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	out := make(map[string]string, len(d.static.bootedWithout))
	for k, v := range d.static.bootedWithout {
		out[k] = v
	}
	return out
}
