package chaos

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// obs is one fresh look at a run: simulator VMs first, then the API objects (so a Machine seen without
// its VM existed when the VM was already gone).
type obs struct {
	pool     *afv1.VsphereAgentPool
	vms      []vsphere.VMInfo
	vas      []afv1.VsphereAgent
	machines []world.MachineView
	agents   []unstructured.Unstructured
}

func (r *run) observe() (*obs, error) {
	o := &obs{}
	var err error
	if o.vms, err = r.vmsOfPool(); err != nil {
		return nil, err
	}
	p := &afv1.VsphereAgentPool{}
	if err := r.c.h.Client.Get(r.ctx, r.pool, p); err == nil {
		o.pool = p
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	var vas afv1.VsphereAgentList
	if err := r.c.h.Client.List(r.ctx, &vas, client.InNamespace(r.s.Namespace)); err != nil {
		return nil, err
	}
	o.vas = vas.Items
	if o.machines, err = r.w.Observe(r.ctx, r.s.NodePool); err != nil {
		return nil, err
	}
	agents := &unstructured.UnstructuredList{}
	agents.SetGroupVersionKind(world.AgentGVK.GroupVersion().WithKind("AgentList"))
	if err := r.c.h.Client.List(r.ctx, agents, client.InNamespace(r.s.Namespace)); err != nil {
		return nil, err
	}
	o.agents = agents.Items
	return o, nil
}

func (o *obs) liveVAs() []afv1.VsphereAgent {
	var out []afv1.VsphereAgent
	for _, va := range o.vas {
		if va.DeletionTimestamp.IsZero() {
			out = append(out, va)
		}
	}
	return out
}

func (o *obs) releasing() int { return len(o.vas) - len(o.liveVAs()) }

func (o *obs) liveMachines() int {
	n := 0
	for _, m := range o.machines {
		if !m.Deleting {
			n++
		}
	}
	return n
}

// served: n live Machines, each bound to an Agent, n VMs, n VsphereAgents.
func (o *obs) served(n int) bool {
	for _, m := range o.machines {
		if !m.Deleting && m.Agent == "" {
			return false
		}
	}
	return o.liveMachines() == n && len(o.vms) == n && len(o.liveVAs()) == n
}

func (o *obs) installed() int {
	n := 0
	for i := range o.agents {
		if unstructuredcond.IsTrue(&o.agents[i], world.CondInstalled) {
			n++
		}
	}
	return n
}

func (o *obs) vm(instanceUUID string) *vsphere.VMInfo {
	for i := range o.vms {
		if strings.EqualFold(o.vms[i].InstanceUUID, instanceUUID) {
			return &o.vms[i]
		}
	}
	return nil
}

// ejected counts VsphereAgents reporting Ejected whose VM has no ISO connected any more.
func (o *obs) ejected() int {
	n := 0
	for i := range o.vas {
		if vm := o.vm(string(o.vas[i].UID)); vm != nil && harness.EjectionReason(&o.vas[i]) == afv1.ReasonEjected && !harness.ISOAttached(vm) {
			n++
		}
	}
	return n
}

func (o *obs) describe() string {
	return fmt.Sprintf("%d VMs, %d VsphereAgents (%d deleting), %d Agents (%d installed), %d Machines (%d live); pool present: %t",
		len(o.vms), len(o.vas), o.releasing(), len(o.agents), o.installed(), len(o.machines), o.liveMachines(), o.pool != nil)
}

// checkInstant: invariants that hold at every observation.
func (r *run) checkInstant(o *obs) {
	perOwner := map[string]int{}
	hosts := map[string]bool{}
	for _, vm := range o.vms {
		perOwner[strings.ToLower(vm.Ownership.OwnerUID)]++
		hosts[world.AgentNameFor(vm.BIOSUUID)] = true
	}
	for owner, n := range perOwner {
		if n > 1 {
			r.violate("%d VMs carry the marker of VsphereAgent UID %s (two VMs for one VsphereAgent)", n, owner)
		}
	}
	for _, m := range o.machines {
		if m.Agent == "" {
			continue
		}
		if _, name, _ := strings.Cut(m.Agent, "/"); !hosts[name] {
			r.violate("Machine %s is backed by Agent %s whose VM is gone (a VM backing an existing Machine was destroyed)", m.Name, name)
		}
	}
	if r.static != nil {
		r.checkLeasesInstant(o)
	}
	r.checkLimitInstant(o)
}

var contentAddressed = regexp.MustCompile(`^[0-9a-f]{64}\.iso$`)

// checkInvariants: after the run settled.
func (r *run) checkInvariants() {
	o, err := r.observe()
	if err != nil {
		r.violate("final observation: %v", err)
		return
	}
	r.checkInstant(o)
	owned := map[string]bool{}
	for _, va := range o.vas {
		owned[strings.ToLower(string(va.UID))] = true
	}
	live := map[string]bool{}
	for _, m := range o.machines {
		if _, name, ok := strings.Cut(m.Agent, "/"); ok {
			live[name] = true
		}
	}
	for _, vm := range o.vms {
		switch {
		case owned[strings.ToLower(vm.Ownership.OwnerUID)], r.retained:
		case r.released && live[world.AgentNameFor(vm.BIOSUUID)]:
		default:
			r.violate("leak: VM %s (instance UUID %s) carries the pool's marker but no VsphereAgent owns it", vm.Name, vm.InstanceUUID)
		}
	}
	for _, va := range o.vas {
		rec := va.Status.ISOEjection
		if rec == nil {
			continue
		}
		vm := o.vm(rec.InstanceUUID)
		resumable := vm != nil
		if vm != nil {
			resumable = false
			for _, cd := range vm.CDROMs {
				resumable = resumable || cd.Key == rec.DeviceKey
			}
		}
		if !resumable {
			r.violate("VsphereAgent %s keeps an ejection record of %s that cannot be resumed (VM or CD-ROM %d gone)", va.Name, rec.ISOPath, rec.DeviceKey)
		}
	}
	for uuid, w := range r.locked {
		perQuestion := map[string]int{}
		for _, a := range w.Answers() {
			perQuestion[a.QuestionID]++
		}
		for q, n := range perQuestion {
			if n > 1 {
				r.violate("lock question %s of VM %s answered %d times", q, uuid, n)
			}
		}
		for i := range o.vas {
			if strings.EqualFold(string(o.vas[i].UID), uuid) && harness.EjectionReason(&o.vas[i]) == afv1.ReasonEjected && len(perQuestion) == 0 {
				r.violate("VsphereAgent %s reports Ejected but its locked guest's question was never answered", o.vas[i].Name)
			}
		}
	}
	r.checkTags(o)
	r.checkCopies()
	if r.static != nil {
		r.checkStaticSettled(o)
	}
	if r.domains != nil && o.pool != nil {
		if err := r.checkPlacementNow(); err != nil {
			r.violate("checking placement: %v", err)
		}
	}
	r.knownImages()
	r.checkISOFiles()
	for _, v := range r.c.checkForeign(r.ctx) {
		r.violate("%s", v)
	}
}

// checkTags: every VM of the pool carries the pool's vmTags, including one adopted after a crash
// between its create task and its tags.
func (r *run) checkTags(o *obs) {
	if r.poolObj == nil || len(r.poolObj.Spec.VSphere.VMTags) == 0 {
		return
	}
	for _, vm := range o.vms {
		sim := r.c.h.VC.VMByInstanceUUID(vm.InstanceUUID)
		if sim == nil {
			continue
		}
		tags, err := r.c.h.VC.AttachedTags(r.ctx, sim.Reference())
		if err != nil {
			r.violate("reading the tags of VM %s: %v", vm.Name, err)
			continue
		}
		for _, want := range r.poolObj.Spec.VSphere.VMTags {
			if !slices.Contains(tags, want) {
				r.violate("VM %s lacks the pool's tag %q (has %v)", vm.Name, want, tags)
			}
		}
	}
}

// checkISOFiles: every content-addressed ISO under the pool's prefix is complete (its size is the size
// of the image with that digest).
func (r *run) checkISOFiles() {
	if r.poolObj == nil {
		return
	}
	ds := r.poolObj.Spec.VSphere.ISODatastore
	files, err := r.c.h.VSphere.ListFiles(r.ctx, vcsim.Datacenter, "["+ds+"] "+iso.PathPrefix(r.poolObj))
	if err != nil {
		if !vsphere.IsNotFound(err) {
			r.violate("listing the ISO cache: %v", err)
		}
		return
	}
	for _, f := range files {
		if !contentAddressed.MatchString(f.Name) {
			continue
		}
		want, known := r.isoSizes[strings.TrimSuffix(f.Name, ".iso")]
		if !known || f.SizeBytes != want {
			r.violate("final-named ISO %s holds %d bytes; the image with that digest has %d (truncated or wrong)", f.Path, f.SizeBytes, want)
		}
	}
}

// foreignState is what the operator must never touch: the simulator's VMs without our marker (power
// state and config change version) and a medium outside any pool's prefix.
type foreignState struct {
	vms   map[string]string
	media string
	size  int64
}

func foreignVMs(ctx context.Context, c *campaign) (map[string]string, error) {
	gc, err := c.h.VC.Login(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = gc.Logout(context.Background()) }()
	v, err := view.NewManager(gc.Client).CreateContainerView(ctx, gc.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = v.Destroy(context.Background()) }()
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "config.changeVersion", "config.extraConfig", "runtime.powerState"}, &vms); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, vm := range vms {
		ours, change := false, ""
		if vm.Config != nil {
			change = vm.Config.ChangeVersion
			for _, o := range vm.Config.ExtraConfig {
				if ov := o.GetOptionValue(); ov != nil && ov.Key == vsphere.ExtraConfigOwnerUID {
					ours = true
				}
			}
		}
		if !ours {
			out[vm.Self.Value+" "+vm.Name] = fmt.Sprintf("power %s, change %s", vm.Runtime.PowerState, change)
		}
	}
	return out, nil
}

func (c *campaign) recordForeign(ctx context.Context) error {
	vms, err := foreignVMs(ctx, c)
	if err != nil {
		return err
	}
	c.foreign.vms = vms
	c.foreign.media = "[" + vcsim.Datastore + "] foreign/keep.iso"
	data := bytes.Repeat([]byte("not ours "), 4096)
	c.foreign.size = int64(len(data))
	return c.h.VSphere.UploadFile(ctx, vcsim.Datacenter, c.foreign.media, bytes.NewReader(data), c.foreign.size)
}

func (c *campaign) checkForeign(ctx context.Context) []string {
	var out []string
	now, err := foreignVMs(ctx, c)
	if err != nil {
		return []string{"listing foreign VMs: " + err.Error()}
	}
	for k, was := range c.foreign.vms {
		if is, ok := now[k]; !ok {
			out = append(out, "foreign VM "+k+" (no marker) was destroyed")
		} else if is != was {
			out = append(out, fmt.Sprintf("foreign VM %s (no marker) was touched: %s -> %s", k, was, is))
		}
	}
	for k := range now {
		if _, ok := c.foreign.vms[k]; !ok {
			out = append(out, "a VM without our marker appeared: "+k)
		}
	}
	if fi, err := c.h.VSphere.StatFile(ctx, vcsim.Datacenter, c.foreign.media); err != nil || fi.SizeBytes != c.foreign.size {
		out = append(out, fmt.Sprintf("foreign medium %s was touched (%v)", c.foreign.media, err))
	}
	return out
}
