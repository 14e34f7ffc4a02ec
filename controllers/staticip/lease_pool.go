package staticip

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/leases"
)

// Static addressing (pools with spec.network): a lease is an IPAddressClaim owned by the pool, carrying a
// MAC from VMware's static range, and the NMStateConfig (owned by the claim) that puts the claimed address
// into the InfraEnv's discovery image. Claims and NMStateConfigs are read live (no informer: hubs without
// CAPI IPAM still run DHCP pools), and the pool polls while leases are in flight.
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=ipaddressclaims,verbs=list;create;update;delete
// +kubebuilder:rbac:groups=ipam.cluster.x-k8s.io,resources=ipaddresses,verbs=get
// +kubebuilder:rbac:groups=agent-install.openshift.io,resources=nmstateconfigs,verbs=list;create;delete

const (
	// labelLeaseState marks a claim whose VM is gone (released: removed in the next batch) or kept (retained).
	labelLeaseState = "agent-forge.containeroo.ch/lease-state"
	// labelLease names, on an NMStateConfig, the claim (lease) it belongs to.
	labelLease = "agent-forge.containeroo.ch/lease"
	// annotationMAC is the lease's MAC on its claim.
	annotationMAC = "agent-forge.containeroo.ch/mac"
	// annotationReleasedAt is when a lease's VM was confirmed destroyed (RFC 3339).
	annotationReleasedAt = "agent-forge.containeroo.ch/released-at"
	// leasePoll is how often a pool or VM with leases in flight looks again (claims are not watched).
	leasePoll = 2 * time.Second
	// releaseQuiet and releaseWindow batch released leases (one image regeneration for a whole scale-down):
	// removed once no lease was released for releaseQuiet and no VM is being destroyed, at the latest
	// releaseWindow after the first; a pool's first pass in a (re)started manager removes them at once.
	releaseQuiet  = ReleaseQuiet
	releaseWindow = ReleaseWindow
)

// ReleaseQuiet and ReleaseWindow are the release batching's timers (docs/static-ips.md); the crash
// campaign derives its bound for "no lease left behind" from them.
const (
	ReleaseQuiet  = 10 * time.Second
	ReleaseWindow = time.Minute
)

// State is what one pool pass observed about its leases (nil for DHCP pools).
type State struct {
	leases []leases.Lease
	claims map[string]*unstructured.Unstructured
	// configs are the pool's NMStateConfigs by lease name.
	configs map[string]*unstructured.Unstructured
	// secondaries are the leases' secondary claims (other pools of their NICs), by lease name.
	secondaries map[string][]*unstructured.Unstructured
	// addresses are the validated addresses (by NIC index) of leases whose NMStateConfig is still to be written.
	addresses map[string]map[int][]leases.Address
	selector  map[string]string
	// usedMACs are the MACs of every claim and NMStateConfig in the namespace (any owner).
	usedMACs sets.Set[string]
	// block is the reason no VM may be created (with blockMsg), "" when leases can be served.
	block, blockMsg string
	// unservable says which leases cannot be served now (refused addresses, held leases whose config
	// is not in an image past the deadline); StaticIPsReady is False while it is set.
	unservable, unservableMsg string
	// awaitingImage counts VMs holding a lease that the cached image does not carry yet.
	awaitingImage int
}

// Block is the reason static addressing blocks creation ("" for DHCP pools, a nil State, or when leases
// flow).
func (st *State) Block() string {
	if st == nil {
		return ""
	}
	return st.block
}

// BlockMessage says why creation is blocked ("" when it is not).
func (st *State) BlockMessage() string {
	if st == nil {
		return ""
	}
	return st.blockMsg
}

// observeLeases reads the pool's leases and decides whether creation must wait (no IPAM, no selector,
// exhausted IPAM pool).
func (ls *Leases) observeLeases(ctx context.Context, s *pass) error {
	if s.pool.Spec.Network == nil {
		return nil
	}
	st := &State{claims: map[string]*unstructured.Unstructured{}, configs: map[string]*unstructured.Unstructured{},
		addresses: map[string]map[int][]leases.Address{}, secondaries: map[string][]*unstructured.Unstructured{}, usedMACs: sets.New[string]()}
	s.staticIP = st
	if _, err := agents.UseServedIPAMVersion(ls.Client.RESTMapper()); err != nil {
		st.block, st.blockMsg = afv1.ReasonIPAMUnavailable, "the hub serves no ipam.cluster.x-k8s.io IPAddressClaim: install Cluster API's IPAM CRDs and an IPAM provider"
		ls.staticIPRefused(s)
		return nil
	}
	sel, msg, err := ls.nmStateSelector(ctx, s.pool)
	if err != nil {
		return err
	}
	if msg != "" {
		st.block, st.blockMsg = afv1.ReasonInfraEnvSelectsNoNMStateConfig, msg
		ls.staticIPRefused(s)
		return nil
	}
	st.selector = sel
	claims := agents.NewList(agents.IPAddressClaimGVK())
	if err := ls.APIReader.List(ctx, claims, client.InNamespace(s.pool.Namespace)); err != nil {
		return fmt.Errorf("listing IPAddressClaims: %w", err)
	}
	configs := agents.NewList(agents.NMStateConfigGVK)
	if err := ls.APIReader.List(ctx, configs, client.InNamespace(s.pool.Namespace)); err != nil {
		return fmt.Errorf("listing NMStateConfigs: %w", err)
	}
	ourConfigs := st.configs
	for i := range configs.Items {
		c := &configs.Items[i]
		for _, mac := range nmStateMACs(c) {
			st.usedMACs.Insert(mac)
		}
		if c.GetLabels()[afv1.LabelPool] == s.pool.Name {
			ourConfigs[c.GetName()] = c
		}
	}
	secondaries := map[string]*unstructured.Unstructured{}
	var own []*unstructured.Unstructured
	for i := range claims.Items {
		c := &claims.Items[i]
		if mac := strings.ToLower(c.GetAnnotations()[annotationMAC]); mac != "" {
			st.usedMACs.Insert(mac)
		}
		for _, mac := range parseNICMACs(c.GetAnnotations()[annotationNICMACs]) {
			st.usedMACs.Insert(mac)
		}
		if c.GetLabels()[afv1.LabelPool] != s.pool.Name {
			continue
		}
		if lease := c.GetLabels()[labelLease]; lease != "" {
			secondaries[c.GetName()] = c
			st.secondaries[lease] = append(st.secondaries[lease], c)
			continue
		}
		if ownedBy(c, s.pool.UID) {
			own = append(own, c)
		}
	}
	for _, c := range own {
		st.claims[c.GetName()] = c
		st.leases = append(st.leases, withSecondaries(leaseOf(c, ourConfigs[c.GetName()], sel), c, secondaries, s.pool))
	}
	sort.Slice(st.leases, func(i, j int) bool { return st.leases[i].Name < st.leases[j].Name })
	if err := ls.checkAddresses(ctx, s); err != nil {
		return err
	}

	ref := s.pool.Spec.Network.AddressesFromPools[0]
	free, exhausted, exhaustedPool := 0, "", ref.Kind+" "+ref.Name
	for _, l := range st.leases {
		switch l.StateOf() {
		case leases.StateReady, leases.StatePending:
			free++
		case leases.StateExhausted:
			exhausted, exhaustedPool = l.Exhausted, ref.Kind+" "+ref.Name
			if l.ExhaustedPool != "" {
				exhaustedPool = l.ExhaustedPool
			}
		}
	}
	switch {
	case exhausted != "" && free == 0:
		st.block = afv1.ReasonIPPoolExhausted
		st.blockMsg = fmt.Sprintf("IPAM pool %s has no free address for this pool's next VM (%s); no VM is created until an address is free", exhaustedPool, exhausted)
	case st.unservable == afv1.ReasonInvalidIPAddress && free == 0:
		st.block, st.blockMsg = st.unservable, st.unservableMsg+"; no VM is created until IPAM pool "+ref.Kind+" "+ref.Name+" hands out a valid address"
	}
	ls.staticIPRefused(s)
	return nil
}

// staticIPRefused announces a lasting static addressing block by a rate-limited Warning Event (the
// condition StaticIPsReady carries it too); a cleared block re-arms the Event.
func (ls *Leases) staticIPRefused(s *pass) {
	key := client.ObjectKeyFromObject(s.pool).String() + "/static-ip"
	if s.staticIP.block == "" {
		ls.Events.Clear(key)
		return
	}
	if ls.Events.Allow(key, s.staticIP.block, ls.Clock.Now()) {
		ls.Recorder.Eventf(s.pool, nil, "Warning", s.staticIP.block, events.ActionPreflight, "%s", s.staticIP.blockMsg)
	}
}

// nmStateSelector returns the InfraEnv's spec.nmStateConfigLabelSelector.matchLabels, or why it cannot
// be used: NMStateConfigs that the InfraEnv does not select never reach the image.
func (ls *Leases) nmStateSelector(ctx context.Context, pool *afv1.VsphereAgentPool) (map[string]string, string, error) {
	ie := agents.New(agents.InfraEnvGVK)
	if err := ls.Client.Get(ctx, types.NamespacedName{Namespace: pool.Namespace, Name: pool.Spec.InfraEnvRef.Name}, ie); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "InfraEnv " + pool.Spec.InfraEnvRef.Name + " not found", nil
		}
		return nil, "", err
	}
	sel, _, _ := unstructured.NestedStringMap(ie.Object, "spec", "nmStateConfigLabelSelector", "matchLabels")
	exprs, _, _ := unstructured.NestedSlice(ie.Object, "spec", "nmStateConfigLabelSelector", "matchExpressions")
	switch {
	case len(exprs) > 0:
		return nil, "InfraEnv " + ie.GetName() + " selects NMStateConfigs with matchExpressions; static-IP pools need spec.nmStateConfigLabelSelector.matchLabels only", nil
	case len(sel) == 0:
		return nil, "InfraEnv " + ie.GetName() + " has no spec.nmStateConfigLabelSelector.matchLabels: no NMStateConfig would reach its discovery image", nil
	}
	return sel, "", nil
}

// leaseOf builds the lease view of a claim and its NMStateConfig (nil when not created yet); selector is
// the InfraEnv's current nmStateConfigLabelSelector.matchLabels.
func leaseOf(claim, config *unstructured.Unstructured, selector map[string]string) leases.Lease {
	l := leases.Lease{
		Name: claim.GetName(), MAC: strings.ToLower(claim.GetAnnotations()[annotationMAC]),
		Holder: claim.GetLabels()[afv1.LabelVsphereAgent], Disposition: leases.State(claim.GetLabels()[labelLeaseState]),
		Deleting: claim.GetDeletionTimestamp() != nil, Claimed: claim.GetCreationTimestamp().Time,
	}
	l.AddressName, _, _ = unstructured.NestedString(claim.Object, "status", "addressRef", "name")
	if t, err := time.Parse(time.RFC3339, claim.GetAnnotations()[annotationReleasedAt]); err == nil {
		l.ReleasedAt = t
	}
	for _, c := range agents.Conditions(claim) {
		if c.Type == "Ready" && c.Status == "False" && c.Reason == "PoolExhausted" {
			l.Exhausted = c.Message
			if l.Exhausted == "" {
				l.Exhausted = "PoolExhausted"
			}
		}
	}
	if config != nil && config.GetDeletionTimestamp() == nil {
		l.HasConfig, l.ConfigCreated = true, config.GetCreationTimestamp().Time
		l.Selected = leases.Selects(selector, config.GetLabels())
	}
	return l
}

func ownedBy(o metav1.Object, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func nmStateMACs(c *unstructured.Unstructured) []string {
	ifaces, _, _ := unstructured.NestedSlice(c.Object, "spec", "interfaces")
	var out []string
	for _, i := range ifaces {
		if m, ok := i.(map[string]any); ok {
			if mac, ok := m["macAddress"].(string); ok {
				out = append(out, strings.ToLower(mac))
			}
		}
	}
	return out
}

// prepareLeases keeps spareLeases leases ahead of the pool's VMs: new claims in one batch, their
// NMStateConfigs in one batch once the whole batch has addresses (each change regenerates the image),
// and released leases removed together.
func (ls *Leases) prepareLeases(ctx context.Context, s *pass) error {
	st := s.staticIP
	if st == nil || s.pool.Spec.Paused || st.block == afv1.ReasonIPAMUnavailable || st.block == afv1.ReasonInfraEnvSelectsNoNMStateConfig {
		return nil
	}
	live := 0
	for _, va := range s.vas {
		// A VsphereAgent the pool deleted counts as gone even while a lagging cache lists it unchanged,
		// as the pool's planner counts it (issue 44: counted live, it made the pass claim one more spare).
		if va.DeletionTimestamp.IsZero() && !s.deleting.Has(va.Name) {
			live++
		}
	}
	if err := ls.removeStale(ctx, s); err != nil {
		return err
	}
	pendingCreates := s.pendingCreates
	spare := int(s.pool.Spec.Network.SpareLeases)
	plan := leases.Decide(st.leases, live, pendingCreates, spare)
	if plan.Create > 0 && s.vs != nil {
		if err := ls.createClaims(ctx, s, plan.Create); err != nil {
			return err
		}
	}
	if err := ls.createSecondaries(ctx, s, nil); err != nil {
		return err
	}
	if err := ls.followSelector(ctx, s); err != nil {
		return err
	}
	if err := ls.createConfigs(ctx, s); err != nil {
		return err
	}
	ls.findUnservedHolds(s)
	deleting := false
	for _, va := range s.vas {
		deleting = deleting || !va.DeletionTimestamp.IsZero()
	}
	var released []leases.Lease
	for _, l := range st.leases {
		if slices.Contains(plan.Release, l.Name) {
			released = append(released, l)
		}
	}
	// A (re)started manager settles what it finds at once: the batch it would wait for may have been
	// cut by the restart, and a crash must not add the batching delay on top of its own.
	first := ls.firstPass(client.ObjectKeyFromObject(s.pool), s.pool.UID)
	if !first && !leases.ReleaseDue(released, deleting, ls.Clock.Now(), releaseQuiet, releaseWindow) {
		plan.Release = nil // the scale-down is still destroying VMs: release them together
	}
	if len(plan.Release) > 0 {
		if _, err := ls.removeLeases(ctx, s.pool, st, plan.Release, false); err != nil {
			return err
		}
		ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesReleased, events.ActionLeaseAddresses, "released %d static address lease(s) of destroyed VMs: %s", len(plan.Release), strings.Join(plan.Release, ", "))
	} else if trim := leases.Surplus(st.leases, live, pendingCreates, spare, ls.Clock.Now(), releaseQuiet); len(trim) > 0 {
		// A spare beyond the target (an overshoot: a retried create, a lagging cache) goes back to the
		// IPAM pool once demand has settled, or it would hold an address for good.
		removed, err := ls.removeLeases(ctx, s.pool, st, trim, true)
		if err != nil {
			return err
		}
		if len(removed) > 0 {
			ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesTrimmed, events.ActionLeaseAddresses, "removed %d spare static address lease(s) beyond spareLeases %d: %s", len(removed), spare, strings.Join(removed, ", "))
			s.requeueAfter(leasePoll)
		}
	}
	for _, l := range st.leases {
		if st := l.StateOf(); st == leases.StatePending || st == leases.StateAssigned {
			s.requeueAfter(leasePoll)
			break
		}
	}
	if plan.Create > 0 || len(released) > 0 {
		s.requeueAfter(leasePoll)
	}
	return nil
}

// createClaims creates n claims named <pool>-ip-<i> (lowest free indexes: a stale read retries a name
// that exists instead of creating a second claim), each with a MAC unused in the namespace and in vCenter.
func (ls *Leases) createClaims(ctx context.Context, s *pass, n int) error {
	st := s.staticIP
	nics, err := s.vs.NICMACs(ctx, s.pool.Spec.VSphere.Datacenter)
	if err != nil {
		return fmt.Errorf("listing NIC MACs in vCenter: %w", err)
	}
	for _, m := range nics {
		st.usedMACs.Insert(m)
	}
	ref := s.pool.Spec.Network.AddressesFromPools[0]
	rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(ls.Clock.Now().UnixNano())))
	created := 0
	var newLeases []*unstructured.Unstructured
	for i := 0; created < n && i < 10000; i++ {
		name := fmt.Sprintf("%s-ip-%d", truncateName(s.pool.Name, 240), i)
		if _, exists := st.claims[name]; exists {
			continue
		}
		mac, nicMACs, err := newLeaseMACs(s.pool, rng, st)
		if err != nil {
			return err
		}
		claim := agents.New(agents.IPAddressClaimGVK())
		claim.SetNamespace(s.pool.Namespace)
		claim.SetName(name)
		claim.SetLabels(map[string]string{afv1.LabelPool: s.pool.Name})
		ann := map[string]string{annotationMAC: mac}
		if len(nicMACs) > 0 {
			ann[annotationNICMACs] = formatNICMACs(nicMACs)
		}
		if shape := Shape(s.pool); shape != "" {
			ann[annotationShape] = shape
		}
		claim.SetAnnotations(ann)
		claim.Object["spec"] = map[string]any{"poolRef": map[string]any{"apiGroup": ref.APIGroup, "kind": ref.Kind, "name": ref.Name}}
		if err := controllerutil.SetControllerReference(s.pool, claim, ls.Client.Scheme()); err != nil {
			return err
		}
		if err := ls.Client.Create(ctx, claim); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// A claim our read missed (an earlier create that landed late): it is one of the n, so
				// counting it keeps the pool from one lease more than Decide wanted, kept for good.
				created++
				continue
			}
			ls.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonLeaseClaimFailed, events.ActionLeaseAddresses, "creating IPAddressClaim %s: %v", name, err)
			return fmt.Errorf("creating IPAddressClaim %s: %w", name, err)
		}
		// Its secondary claims (the other pools of its NICs) right after it.
		newLeases = append(newLeases, claim)
		created++
		if err := crashpoint.Hit(ctx, crashpoint.LeaseClaimed); err != nil {
			return err
		}
	}
	if err := ls.createSecondaries(ctx, s, newLeases); err != nil {
		return err
	}
	if created > 0 {
		ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesClaimed, events.ActionLeaseAddresses, "claimed %d address(es) from %s %s", created, ref.Kind, ref.Name)
	}
	return nil
}

func truncateName(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-.")
}

// createConfigs writes the NMStateConfig of every claim that has its address, once no claim of the batch
// still waits for one (one image regeneration per batch, not one per VM); a held lease whose VM is not
// created yet gets its config back too (it was replaced, or removed when no image carried it in time).
func (ls *Leases) createConfigs(ctx context.Context, s *pass) error {
	st := s.staticIP
	waiting := waitingHolders(s.vas)
	var ready []leases.Lease
	for _, l := range st.leases {
		switch state := l.StateOf(); {
		case l.Deleting || l.HasConfig:
			continue
		case state == leases.StateAssigned && waiting.Has(l.Holder) && l.Disposition == "" && l.Complete():
		case state != leases.StatePending:
			continue
		case !l.Complete() && l.Exhausted == "":
			return nil // the batch is not complete yet
		case !l.Complete():
			continue
		}
		ready = append(ready, l)
	}
	written := 0
	for _, l := range ready {
		addr, ok := st.addresses[l.Name]
		if !ok {
			continue // refused (checkAddresses), or not read yet
		}
		if err := ls.createConfig(ctx, s.pool, st, l, addr); err != nil {
			return err
		}
		written++
		if err := crashpoint.Hit(ctx, crashpoint.LeaseConfigCreated); err != nil {
			return err
		}
	}
	if written > 0 {
		ls.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonLeasesPrepared, events.ActionLeaseAddresses, "wrote %d NMStateConfig(s) for InfraEnv %s; its discovery image is regenerated once for them", written, s.pool.Spec.InfraEnvRef.Name)
	}
	return nil
}

func readIPAddress(ctx context.Context, reader client.Reader, namespace, name string) (leases.Address, error) {
	u := agents.New(agents.IPAddressGVK())
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
		return leases.Address{}, fmt.Errorf("reading IPAddress %s: %w", name, err)
	}
	var a leases.Address
	a.Address, _, _ = unstructured.NestedString(u.Object, "spec", "address")
	prefix, _, _ := unstructured.NestedInt64(u.Object, "spec", "prefix")
	a.Prefix = int32(prefix)
	a.Gateway, _, _ = unstructured.NestedString(u.Object, "spec", "gateway")
	return a, nil
}

func (ls *Leases) createConfig(ctx context.Context, pool *afv1.VsphereAgentPool, st *State, l leases.Lease, addrs map[int][]leases.Address) error {
	cfg := nmStateConfig(pool, l, addrs)
	doc, err := leases.NMState(cfg)
	if err != nil {
		return fmt.Errorf("lease %s: %w", l.Name, err) // ValidateAddress refused such addresses already
	}
	labels := map[string]string{afv1.LabelPool: pool.Name, labelLease: l.Name}
	for k, v := range st.selector {
		labels[k] = v
	}
	c := agents.New(agents.NMStateConfigGVK)
	c.SetNamespace(pool.Namespace)
	c.SetName(l.Name)
	c.SetLabels(labels)
	c.Object["spec"] = map[string]any{
		"config":     doc,
		"interfaces": leases.NMStateInterfaces(cfg),
	}
	// Owned by the claim (the lease), without blockOwnerDeletion: that would need update on
	// ipaddressclaims/finalizers, and the pool removes the NMStateConfig before the claim anyway.
	claim := st.claims[l.Name]
	isController := true
	c.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: claim.GetAPIVersion(), Kind: claim.GetKind(),
		Name: claim.GetName(), UID: claim.GetUID(), Controller: &isController}})
	if err := ls.Client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NMStateConfig %s: %w", l.Name, err)
	}
	st.configs[l.Name] = c
	return nil
}

// retainLease marks a lease as kept with its VM and drops the pool's ownership, so that neither the pool's
// deletion nor garbage collection frees an address a running VM still uses.
func (ls *Leases) retainLease(ctx context.Context, c client.Client, claim *unstructured.Unstructured, poolUID types.UID) error {
	return markLease(ctx, c, claim, leases.StateRetained, poolUID, ls.Clock.Now())
}

// markLease sets a claim's lease state; retained also drops the owner reference of ownerUID.
func markLease(ctx context.Context, c client.Client, claim *unstructured.Unstructured, state leases.State, ownerUID types.UID, now time.Time) error {
	labels := claim.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	changed := labels[labelLeaseState] != string(state)
	labels[labelLeaseState] = string(state)
	claim.SetLabels(labels)
	if state == leases.StateReleased && changed {
		ann := claim.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[annotationReleasedAt] = now.UTC().Format(time.RFC3339)
		claim.SetAnnotations(ann)
	}
	if state == leases.StateRetained {
		var refs []metav1.OwnerReference
		for _, ref := range claim.GetOwnerReferences() {
			if ref.UID != ownerUID {
				refs = append(refs, ref)
			} else {
				changed = true
			}
		}
		claim.SetOwnerReferences(refs)
	}
	if !changed {
		return nil
	}
	if err := c.Update(ctx, claim); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("marking lease %s %s: %w", claim.GetName(), state, err)
	}
	return nil
}
