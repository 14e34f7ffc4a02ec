package poolspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// templateFields are the fields of a pool's spec that shape a VM (what vCenter is asked to build), as
// the VsphereAgent controller's vmSpec reads them: the template, the hardware profile, the VM's virtual
// hardware settings of spec.vsphere and the network of its failure domain. Placement (folder, resource
// pool, datastore), tags, the name and the discovery image are not the VM's shape: the image has its own
// rule (outdated images), and a VM in another folder is the same worker.
type templateFields struct {
	NumCPUs        int32              `json:"numCPUs,omitempty"`
	MemoryMiB      int64              `json:"memoryMiB,omitempty"`
	DiskGiB        int32              `json:"diskGiB,omitempty"`
	GuestID        string             `json:"guestID,omitempty"`
	SCSIType       string             `json:"scsiType,omitempty"`
	Firmware       string             `json:"firmware,omitempty"`
	NetworkAdapter string             `json:"networkAdapterType,omitempty"`
	EagerlyScrub   bool               `json:"diskEagerlyScrub,omitempty"`
	Network        string             `json:"network,omitempty"`
	Hardware       *afv1.HardwareSpec `json:"hardware,omitempty"`
	// AdditionalNetworks are the NICs after the first: their networks and models (their IPAM pools
	// are the discovery image's network configuration, not the VM's shape).
	AdditionalNetworks []nicShape `json:"additionalNetworks,omitempty"`
}

type nicShape struct {
	Network     string `json:"network"`
	AdapterType string `json:"adapterType,omitempty"`
}

// TemplateShape is what of the pool's spec shapes a VM of the failure domain ("" without domains),
// flattened to field -> value ("memoryMiB": "16384", "hardware.dataDisks[0].sizeGiB": "100"): recorded
// on each VsphereAgent when its VM is created, compared with the pool's current one to report drift.
func TemplateShape(pool *afv1.VsphereAgentPool, domain string) map[string]string {
	v, t := pool.Spec.VSphere, pool.Spec.Template
	f := templateFields{NumCPUs: t.NumCPUs, MemoryMiB: t.MemoryMiB, DiskGiB: t.DiskGiB, GuestID: v.GuestID,
		SCSIType: v.SCSIType, Firmware: v.Firmware, NetworkAdapter: v.NetworkAdapterType, EagerlyScrub: v.DiskEagerlyScrub,
		Network: v.Network, Hardware: t.Hardware}
	for _, a := range v.AdditionalNetworks {
		f.AdditionalNetworks = append(f.AdditionalNetworks, nicShape{Network: a.Network, AdapterType: a.AdapterType})
	}
	if pl, ok := DomainOf(pool, domain); ok {
		f.Network = pl.Network
	}
	raw, _ := json.Marshal(f) // plain fields: cannot fail
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	out := map[string]string{}
	flatten("", m, out)
	return out
}

// flatten writes v's leaves into out under dotted keys, list items indexed.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	case []any:
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case float64:
		out[prefix] = strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
	default:
		out[prefix] = fmt.Sprint(x)
	}
}

// TemplateHash names a shape: the first 16 hex digits of the SHA-256 of its sorted "field=value" lines.
func TemplateHash(shape map[string]string) string {
	keys := make([]string, 0, len(shape))
	for k := range shape {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		_, _ = fmt.Fprintf(h, "%s=%s\n", k, shape[k]) // a hash.Hash never fails a write
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// TemplateRecord is the record of the pool's current template for a VM of the failure domain.
func TemplateRecord(pool *afv1.VsphereAgentPool, domain string) *afv1.TemplateRecord {
	return NewTemplates(pool).Record(domain)
}

// ShapeDiff lists, sorted by field, what differs from old to cur: "memoryMiB 16384 -> 32768", a field
// only in one of them with "(unset)" on the other side.
func ShapeDiff(old, cur map[string]string) []string {
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range cur {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		o, inOld := old[k]
		c, inCur := cur[k]
		if inOld && inCur && o == c {
			continue
		}
		if !inOld {
			o = "(unset)"
		}
		if !inCur {
			c = "(unset)"
		}
		out = append(out, fmt.Sprintf("%s %s -> %s", k, o, c))
	}
	sort.Strings(out)
	return out
}

// ShortDiff joins at most limit differences, saying how many more there are.
func ShortDiff(diffs []string, limit int) string {
	if len(diffs) <= limit {
		return strings.Join(diffs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(diffs[:limit], ", "), len(diffs)-limit)
}

// Templates holds the pool's current template per failure domain for one pass (a shape is computed
// once per domain, not once per VM).
type Templates struct {
	pool   *afv1.VsphereAgentPool
	shapes map[string]map[string]string
	hashes map[string]string
}

// NewTemplates starts the pass's view of the pool's templates.
func NewTemplates(pool *afv1.VsphereAgentPool) *Templates {
	return &Templates{pool: pool, shapes: map[string]map[string]string{}, hashes: map[string]string{}}
}

// Drift is how a VsphereAgent's VM differs from the pool's current template for its failure domain:
// nil when it matches or was made before VMs recorded their template (nothing is known).
func (t *Templates) Drift(va *afv1.VsphereAgent) []string {
	rec := va.Status.VM.Template
	if rec == nil || rec.Hash == "" {
		return nil
	}
	cur, hash := t.current(va.Spec.FailureDomain)
	if hash == rec.Hash {
		return nil
	}
	if len(rec.Shape) == 0 { // the recorded shape was pruned (an older CRD): only the hashes are known
		return []string{"template " + rec.Hash + " -> " + hash}
	}
	return ShapeDiff(rec.Shape, cur)
}

// Record is the pool's current template for the failure domain, from the pass's cache.
func (t *Templates) Record(domain string) *afv1.TemplateRecord {
	shape, hash := t.current(domain)
	return &afv1.TemplateRecord{Hash: hash, Shape: shape}
}

// current is the pool's template shape and hash for the failure domain, computed once per pass.
func (t *Templates) current(domain string) (map[string]string, string) {
	if _, ok := t.shapes[domain]; !ok {
		shape := TemplateShape(t.pool, domain)
		t.shapes[domain], t.hashes[domain] = shape, TemplateHash(shape)
	}
	return t.shapes[domain], t.hashes[domain]
}
