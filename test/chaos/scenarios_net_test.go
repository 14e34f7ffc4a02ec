package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/staticip"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Scenarios on the pool's network and placement: static addresses leased through IPAM and NMStateConfigs
// (the pool's spec.network, as controllers/staticip_test.go and the demo set it up through
// harness.EnableStaticIPs), and failure domains (harness.ZoneDomains, one per simulated cluster).
const (
	staticIPScenario = "static-ips"
	domainsScenario  = "failure-domains"
	// spareLeases is the static pool's spec.network.spareLeases: after scale-down to 1, 1 held + 1 spare.
	spareLeases = 1
	// zoneACap is zone-a's maxVMs: with demand 3 zone-a is full and the rest must go to zone-b.
	zoneACap = 1
	// leaseStepBound bounds "no lease left behind" after the scale-down, from the documented timers
	// (docs/static-ips.md): released leases are removed ReleaseQuiet after the last release with no VM
	// being destroyed, at the latest ReleaseWindow after the first, by a pass that looks every Poll;
	// leaseStepSlack is that pass and the IPAM provider's finalizer on a loaded machine.
	leaseStepBound = staticip.ReleaseWindow + staticip.Poll + leaseStepSlack
	leaseStepSlack = 15 * time.Second
)

var (
	staticPoints = append(append(append([]string(nil), downPoints...), crashpoint.StaticIP...), crashpoint.StaticIPRelease...)

	// leaseStateLabel and the lease states are the operator's lease bookkeeping on its IPAddressClaims
	// (docs/static-ips.md).
	leaseStateLabel = "agent-forge.containeroo.ch/lease-state"
)

func init() {
	scenarios = append(scenarios,
		&scenario{staticIPScenario, staticPoints, staticIPs},
		&scenario{domainsScenario, downPoints, failureDomains},
	)
}

// staticIPs: a pool without DHCP scales 0 -> 2 -> 1; every VM boots with its own leased address, and after
// the scale-down the destroyed VM's lease is gone (claim and NMStateConfig), leaving 1 held + 1 spare.
func staticIPs(r *run) error {
	if err := r.up(func(p *afv1.VsphereAgentPool) { p.Spec.Network = r.network.DeepCopy() }, 2); err != nil {
		return err
	}
	if err := r.down(1); err != nil {
		return err
	}
	var last *leaseView
	err := r.awaitWithin(fmt.Sprintf("no lease left behind: 1 held + %d spare", spareLeases), leaseStepBound, func(o *obs) bool {
		ls, err := r.leases()
		if err == nil {
			last = ls
		}
		return err == nil && len(ls.problems(o)) == 0 && ls.held == 1 && len(ls.claims) == 1+spareLeases
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w; leases: %s", err, last.describe())
	}
	return err
}

// describe lists the claims with their holder, lease state, release time and NMStateConfig.
func (v *leaseView) describe() string {
	configs := map[string]bool{}
	for _, c := range v.configs {
		configs[c.GetName()] = true
	}
	var out []string
	for _, c := range v.claims {
		state := c.GetLabels()[leaseStateLabel]
		if state == "" {
			state = "-"
		}
		deleting := ""
		if c.GetDeletionTimestamp() != nil {
			deleting = ", deleting"
		}
		out = append(out, fmt.Sprintf("%s (holder %q, state %s, released-at %q, config %t, created %s%s)", c.GetName(),
			c.GetLabels()[afv1.LabelVsphereAgent], state, c.GetAnnotations()["agent-forge.containeroo.ch/released-at"],
			configs[c.GetName()], c.GetCreationTimestamp().UTC().Format("15:04:05"), deleting))
	}
	return fmt.Sprintf("%d claims: %s", len(v.claims), strings.Join(out, "; "))
}

// failureDomains: two domains, zone-a capped at zoneACap VMs; demand 3 fills zone-a and puts the rest in
// zone-b, then the pool scales down to 1.
func failureDomains(r *run) error {
	if err := r.up(func(p *afv1.VsphereAgentPool) { p.Spec.VSphere.FailureDomains = r.domains }, 3); err != nil {
		return err
	}
	if err := r.checkPlacementNow(); err != nil {
		return err
	}
	return r.down(1)
}

// prepareNet gives the run's hub what its scenario needs before the world starts: the InfraEnv selecting
// the run's NMStateConfigs and the world playing IPAM and image regeneration on the run's ISO server
// (static-ips), or the failure domains (failure-domains). It returns the world's static addressing.
func (r *run) prepareNet(name string) (*world.StaticIPOptions, error) {
	switch name {
	case staticIPScenario:
		scratch := &afv1.VsphereAgentPool{}
		opts, err := r.c.h.EnableStaticIPs(r.ctx, r.s, scratch, spareLeases)
		if err != nil {
			return nil, err
		}
		opts.Images = r.iso // the run's own image server: its InfraEnv points there
		r.network, r.static = scratch.Spec.Network, opts
		return opts, nil
	case domainsScenario:
		r.domains = harness.ZoneDomains(2)
		r.domains[0].MaxVMs = ptr.To(int32(zoneACap))
	}
	return nil, nil
}

// leaseView is the run's static addressing as the API server holds it.
type leaseView struct {
	claims  []unstructured.Unstructured
	configs []unstructured.Unstructured
	addrs   []unstructured.Unstructured
	held    int
}

func (r *run) leases() (*leaseView, error) {
	list := func(gvk schema.GroupVersionKind, labelled bool) ([]unstructured.Unstructured, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.InNamespace(r.s.Namespace)}
		if labelled {
			opts = append(opts, client.MatchingLabels{afv1.LabelPool: r.pool.Name})
		}
		err := r.c.h.Client.List(r.ctx, l, opts...)
		return l.Items, err
	}
	v := &leaseView{}
	var err error
	if v.claims, err = list(world.IPAddressClaimGVK, true); err != nil {
		return nil, err
	}
	if v.configs, err = list(world.NMStateConfigGVK, true); err != nil {
		return nil, err
	}
	if v.addrs, err = list(world.IPAddressGVK, false); err != nil {
		return nil, err
	}
	for _, c := range v.claims {
		if c.GetLabels()[afv1.LabelVsphereAgent] != "" && c.GetLabels()[leaseStateLabel] == "" {
			v.held++
		}
	}
	return v, nil
}

// duplicates: what must never happen at any instant — one address allocated twice, two leases held by one
// VsphereAgent, one address on two live VMs.
func (v *leaseView) duplicates(o *obs) []string {
	var out []string
	byAddr := map[string]string{}
	for _, a := range v.addrs {
		ip, _, _ := unstructured.NestedString(a.Object, "spec", "address")
		if other, dup := byAddr[ip]; dup && ip != "" {
			out = append(out, fmt.Sprintf("address %s leased twice: IPAddress %s and %s", ip, other, a.GetName()))
		}
		byAddr[ip] = a.GetName()
	}
	perHolder := map[string][]string{}
	for _, c := range v.claims {
		if h := c.GetLabels()[afv1.LabelVsphereAgent]; h != "" && c.GetLabels()[leaseStateLabel] == "" {
			perHolder[h] = append(perHolder[h], c.GetName())
		}
	}
	for h, cs := range perHolder {
		if len(cs) > 1 {
			sort.Strings(cs)
			out = append(out, fmt.Sprintf("VsphereAgent %s holds %d leases: %s", h, len(cs), strings.Join(cs, ", ")))
		}
	}
	onVM := map[string]string{}
	for _, va := range o.liveVAs() {
		ip := va.Status.StaticIP
		if ip == nil || ip.Address == "" || o.vm(string(va.UID)) == nil {
			continue
		}
		if other, dup := onVM[ip.Address]; dup {
			out = append(out, fmt.Sprintf("address %s is on two live VMs: %s and %s", ip.Address, other, va.Name))
		}
		onVM[ip.Address] = va.Name
	}
	return out
}

// problems: leases left behind once the pool settled — a released claim not removed, a claim held by a
// VsphereAgent that is gone, an NMStateConfig without its claim.
func (v *leaseView) problems(o *obs) []string {
	live := map[string]bool{}
	for _, va := range o.vas {
		live[va.Name] = true
	}
	names := map[string]bool{}
	var out []string
	for _, c := range v.claims {
		names[c.GetName()] = true
		holder, state := c.GetLabels()[afv1.LabelVsphereAgent], c.GetLabels()[leaseStateLabel]
		switch {
		case state == "released":
			out = append(out, fmt.Sprintf("lease %s of destroyed VM %s left behind (released, not removed)", c.GetName(), holder))
		case holder != "" && state == "" && !live[holder]:
			out = append(out, fmt.Sprintf("lease %s is held by VsphereAgent %s, which is gone", c.GetName(), holder))
		}
	}
	for _, c := range v.configs {
		if !names[c.GetName()] {
			out = append(out, fmt.Sprintf("NMStateConfig %s outlived its lease", c.GetName()))
		}
	}
	return out
}

// checkLeasesInstant runs at every observation of a static-IP run.
func (r *run) checkLeasesInstant(o *obs) {
	v, err := r.leases()
	if err != nil {
		return // the next observation reads them again; the settled check fails on a persistent error
	}
	for _, d := range v.duplicates(o) {
		r.violate("%s", d)
	}
}

// checkStaticSettled: after the run, no lease left behind and the harness's static-IP invariants (every
// bound Agent reports its lease's address, no VM booted an image without its config).
func (r *run) checkStaticSettled(o *obs) {
	v, err := r.leases()
	if err != nil {
		r.violate("reading the leases: %v", err)
		return
	}
	for _, d := range append(v.duplicates(o), v.problems(o)...) {
		r.violate("%s", d)
	}
	snap, err := r.c.h.Observe(r.ctx, r.pool, r.w, r.s.NodePool)
	if err != nil {
		r.violate("observing the static-IP pool: %v", err)
		return
	}
	for _, msg := range snap.StaticIPViolations(r.w) {
		r.violate("%s", msg)
	}
}

// checkPlacementNow: every VM of the pool is in a failure domain of the spec, runs in that domain's
// cluster, its Agent carries the domain's zone, and no domain holds more VMs than its maxVMs.
func (r *run) checkPlacementNow() error {
	ctx, cancel := context.WithTimeout(r.ctx, serveBound)
	defer cancel()
	snap, err := r.c.h.Observe(ctx, r.pool, r.w, r.s.NodePool)
	if err != nil {
		return err
	}
	clusters, err := r.c.h.VMClusters(ctx)
	if err != nil {
		return err
	}
	for _, msg := range snap.ZoneViolations(r.domains, clusters) {
		r.violate("placement: %s", msg)
	}
	perDomain := map[string]int{}
	for _, va := range snap.VAs {
		if va.DeletionTimestamp.IsZero() && va.Status.VM.InstanceUUID != "" {
			perDomain[va.Spec.FailureDomain]++
		}
	}
	for _, d := range r.domains {
		if d.MaxVMs != nil && perDomain[d.Name] > int(*d.MaxVMs) {
			r.violate("placement: failure domain %s holds %d VMs, maxVMs %d", d.Name, perDomain[d.Name], *d.MaxVMs)
		}
	}
	r.note("placement: VMs per failure domain %v", perDomain)
	return nil
}

// checkCreateDomain runs at each CreateVM_Task of a failure-domain run: the VM's VsphereAgent names a
// domain of the spec, and that domain has room (its live VMs plus this one within maxVMs).
func (r *run) checkCreateDomain(call vcsim.VMCall, vas []afv1.VsphereAgent, live map[string]bool, vmOwners []string) {
	domainOf := map[string]string{}
	for _, va := range vas {
		domainOf[strings.ToLower(string(va.UID))] = va.Spec.FailureDomain
	}
	fd, known := domainOf[strings.ToLower(call.OwnerUID)]
	if !known {
		return // reported by checkCreate (no such VsphereAgent)
	}
	var spec *afv1.FailureDomain
	for i := range r.domains {
		if r.domains[i].Name == fd {
			spec = &r.domains[i]
		}
	}
	if spec == nil {
		r.momentViolation("CreateVM_Task of %s in failure domain %q, which the pool's spec does not list", call.Name, fd)
		return
	}
	n := 1
	for _, owner := range vmOwners {
		if live[owner] && !strings.EqualFold(owner, call.OwnerUID) && domainOf[owner] == fd {
			n++
		}
	}
	if spec.MaxVMs != nil && n > int(*spec.MaxVMs) {
		r.momentViolation("CreateVM_Task of %s in failure domain %s makes %d VMs there, maxVMs %d (created in a domain without capacity)", call.Name, fd, n, *spec.MaxVMs)
	}
}

// knownImages adds every discovery image the run's world generated (static addressing regenerates the
// image on the run's ISO server; each regeneration keeps the server's size) to the sizes the ISO check
// knows.
func (r *run) knownImages() {
	if r.static == nil || r.w == nil {
		return
	}
	for _, v := range r.w.ImageVersions() {
		if _, ok := r.isoSizes[v.SHA256]; !ok {
			r.isoSizes[v.SHA256] = r.iso.Size()
		}
	}
}
