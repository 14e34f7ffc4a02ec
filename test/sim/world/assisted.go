package world

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// registerAgents plays a host booting the discovery ISO and assisted-service creating its Agent.
// Hosts call home independently: the registrations of different InfraEnvs are written by workers
// at once, those of one InfraEnv in turn (they are checked against one list of its Agents).
func (d *Driver) registerAgents(ctx context.Context) error {
	if d.vc == nil {
		d.setVMs(nil, false)
		return nil
	}
	vms, err := poweredOnVMs(ctx, d.vc, d.opts.Datacenter)
	if err != nil {
		d.setVMs(nil, false)
		return err
	}
	candidates := d.registrationCandidates(vms)
	type group struct {
		namespace string
		vms       []VM
		infraEnvs []types.NamespacedName
	}
	var groups []*group
	byNS := map[string]*group{}
	for _, vm := range candidates {
		infraEnv, ok, err := d.infraEnvFor(ctx, vm)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if _, ok := d.staticAddressFor(vm); !ok {
			continue // no DHCP: a host whose image lacks its config never reaches assisted-service
		}
		g := byNS[infraEnv.Namespace]
		if g == nil {
			g = &group{namespace: infraEnv.Namespace}
			byNS[infraEnv.Namespace] = g
			groups = append(groups, g)
		}
		g.vms, g.infraEnvs = append(g.vms, vm), append(g.infraEnvs, infraEnv)
	}
	return d.forEach(ctx, len(groups), func(ctx context.Context, i int) error {
		g := groups[i]
		l := newList(AgentGVK)
		if err := d.c.List(ctx, l, client.InNamespace(g.namespace)); err != nil {
			return err
		}
		agents := make([]*unstructured.Unstructured, 0, len(l.Items)+len(g.vms))
		for i := range l.Items {
			agents = append(agents, &l.Items[i])
		}
		for j, vm := range g.vms {
			if existing := agentOf(agents, vm); existing != nil {
				// Registered before this Driver started (e.g. a restarted demo): keep it current too.
				d.trackExisting(vm, client.ObjectKeyFromObject(existing))
				continue
			}
			// Only a running host calls home: the list above may be seconds old under load, and a VM
			// destroyed meanwhile registers nothing.
			if running, err := stillPoweredOn(ctx, d.vc, vm); err != nil {
				return err
			} else if !running {
				continue
			}
			agent, err := d.createAgent(ctx, vm, g.infraEnvs[j])
			if err != nil {
				return err
			}
			agents = append(agents, agent)
		}
		return nil
	})
}

// setVMs records the powered-on VMs the registration behaviour saw (for Connected).
func (d *Driver) setVMs(vms map[string]VM, listed bool) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.vms, d.vmsListed = vms, listed
}

// registrationCandidates records the powered-on VMs and returns those that boot a discovery ISO,
// have not registered yet and have been on for RegistrationDelay.
func (d *Driver) registrationCandidates(vms []VM) []VM {
	now := d.now()
	d.stateMu.Lock()
	register := d.register
	seen := make(map[string]VM, len(vms))
	var out []VM
	for _, vm := range vms {
		key := strings.ToLower(vm.BIOSUUID)
		seen[key] = vm
		if agent, done := d.registered[key]; done {
			// The agent registers at every boot; a host whose Agent was deleted meanwhile (assisted-service
			// deregistered it, and its agent stopped asking) comes back as a new registration.
			_, tracked := d.registeredAt[agent]
			if !d.rebooted[key] || tracked {
				delete(d.rebooted, key)
				continue
			}
			delete(d.registered, key)
			delete(d.firstSeen, key)
		}
		delete(d.rebooted, key)
		if vm.ISOPath == "" && !d.opts.RegisterWithoutISO {
			continue
		}
		out = append(out, vm)
	}
	for key := range d.registered {
		if _, on := seen[key]; !on {
			d.rebooted[key] = true // off or gone: the next power-on is a boot
		}
	}
	d.vms, d.vmsListed = seen, true
	d.stateMu.Unlock()

	kept := out[:0]
	for _, vm := range out {
		if register != nil && !register(vm) { // a test's filter: called without the driver's lock
			continue
		}
		kept = append(kept, vm)
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	ready := kept[:0]
	for _, vm := range kept {
		key := strings.ToLower(vm.BIOSUUID)
		if _, seen := d.firstSeen[key]; !seen {
			d.firstSeen[key] = now
		}
		if now.Sub(d.firstSeen[key]) >= d.opts.RegistrationDelay {
			ready = append(ready, vm)
		}
	}
	return ready
}

// trackExisting adopts an Agent a VM registered before this Driver started.
func (d *Driver) trackExisting(vm VM, key types.NamespacedName) {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	d.registered[strings.ToLower(vm.BIOSUUID)] = key
	if _, tracked := d.registeredAt[key]; !tracked {
		d.registeredAt[key] = d.now().Add(-d.opts.ValidationDelay)
	}
}

// agentOf finds the Agent this VM registered: assisted-service keys a host by its hardware identity (the
// host ID the agent derives from the system UUID, the Agent's name here), never by a MAC: another machine
// booted with the VM's MAC (and no or another serial) is a host of its own. An Agent reporting the VM's
// serial is the VM's too (registered before this Driver started).
func agentOf(agents []*unstructured.Unstructured, vm VM) *unstructured.Unstructured {
	serial, name := SerialFromBIOSUUID(vm.BIOSUUID), AgentNameFor(vm.BIOSUUID)
	for _, a := range agents {
		if a.GetName() == name {
			return a
		}
		if s, _, _ := unstructured.NestedString(a.Object, "status", "inventory", "systemVendor", "serialNumber"); s != "" && s == serial {
			return a
		}
	}
	return nil
}

func (d *Driver) infraEnvFor(ctx context.Context, vm VM) (types.NamespacedName, bool, error) {
	if d.opts.InfraEnvFor != nil {
		k, ok := d.opts.InfraEnvFor(vm)
		return k, ok, nil
	}
	if d.opts.InfraEnv != nil {
		return *d.opts.InfraEnv, true, nil
	}
	ies, err := d.list(ctx, InfraEnvGVK)
	if err != nil {
		return types.NamespacedName{}, false, err
	}
	if len(ies) != 1 {
		d.log.V(1).Info("VM not registered: cannot tell its InfraEnv", "vm", vm.Name, "infraEnvs", len(ies))
		return types.NamespacedName{}, false, nil
	}
	return client.ObjectKeyFromObject(ies[0]), true, nil
}

// RegisterHost plays a registration assisted-service accepted from vm before the VM was destroyed: it
// creates the host's Agent now, whether or not the VM still exists (assisted-service writes the Agent
// from the host record, not from the VM).
func (d *Driver) RegisterHost(ctx context.Context, vm VM, infraEnv types.NamespacedName) (*unstructured.Unstructured, error) {
	return d.createAgent(ctx, vm, infraEnv)
}

// createAgent creates the Agent the way assisted-service does: unapproved, unbound, labelled with
// its InfraEnv (plus the InfraEnv's spec.agentLabels), named by host ID, inventory from the VM.
func (d *Driver) createAgent(ctx context.Context, vm VM, infraEnvKey types.NamespacedName) (*unstructured.Unstructured, error) {
	ie := newObject(InfraEnvGVK)
	if err := d.c.Get(ctx, infraEnvKey, ie); err != nil {
		return nil, fmt.Errorf("infraenv %s: %w", infraEnvKey, err)
	}
	lbls := map[string]string{LabelInfraEnv: infraEnvKey.Name}
	extra, _, _ := unstructured.NestedStringMap(ie.Object, "spec", "agentLabels")
	for k, v := range extra {
		lbls[k] = v
	}
	agent := newObject(AgentGVK)
	agent.SetNamespace(infraEnvKey.Namespace)
	agent.SetName(AgentNameFor(vm.BIOSUUID))
	agent.SetLabels(lbls)
	agent.Object["spec"] = map[string]any{"approved": false, "role": ""}
	if err := d.c.Create(ctx, agent); err != nil {
		if apierrors.IsAlreadyExists(err) {
			d.stateMu.Lock()
			d.registered[strings.ToLower(vm.BIOSUUID)] = client.ObjectKeyFromObject(agent)
			d.stateMu.Unlock()
			return agent, nil
		}
		return nil, fmt.Errorf("creating agent: %w", err)
	}
	d.wrote()
	now := d.now()
	agent.Object["status"] = map[string]any{
		"role":      "auto-assign",
		"bootstrap": false,
		"inventory": map[string]any{
			"hostname": d.opts.ReportedHostname,
			// HostInterface: flags, ipV4Addresses and ipV6Addresses are required by the Agent CRD
			// (no omitempty in agent_types.go). The simulated host has no address to report.
			"interfaces": []any{map[string]any{
				"name": "ens192", "macAddress": vm.MAC, "speedMbps": int64(10000), "mtu": int64(1500),
				"hasCarrier": true, "vendor": "0x15ad", "product": "0x07b0",
				"flags":         []any{"up", "broadcast", "running", "multicast"},
				"ipV4Addresses": d.reportedIPv4(vm), "ipV6Addresses": []any{},
			}},
			"systemVendor": map[string]any{
				"serialNumber": SerialFromBIOSUUID(vm.BIOSUUID), "productName": "VMware7,1",
				"manufacturer": "VMware, Inc.", "virtual": true,
			},
		},
		"debugInfo": map[string]any{"state": "known-unbound"},
	}
	unstructuredcond.Set(agent, now, d.agentConditions(agent, true, now, now)...)
	if err := d.c.Status().Update(ctx, agent); err != nil {
		return nil, fmt.Errorf("agent status: %w", err)
	}
	d.wrote()
	key := client.ObjectKeyFromObject(agent)
	d.stateMu.Lock()
	d.registered[strings.ToLower(vm.BIOSUUID)] = key
	d.registeredAt[key] = now
	d.stateMu.Unlock()
	d.log.Info("agent registered", "agent", key, "vm", vm.Name)
	return agent, nil
}

// agentConditions are assisted-service's conditions of an unbound Agent, or of a bound one for the
// Connected/Validated part only.
func (d *Driver) agentConditions(agent *unstructured.Unstructured, connected bool, registeredAt, now time.Time) []cond {
	conn := cond{Type: CondConnected, Status: "True", Reason: ReasonAgentIsConnected, Message: "The agent's connection to the installation service is unimpaired"}
	if !connected {
		conn = cond{Type: CondConnected, Status: "False", Reason: ReasonAgentIsDisconnected, Message: "The agent has not contacted the installation service in some time, user action should be taken"}
	}
	valid := cond{Type: CondValidated, Status: "True", Reason: ReasonValidationsPassing, Message: "The agent's validations are passing"}
	if now.Sub(registeredAt) < d.opts.ValidationDelay {
		valid = cond{Type: CondValidated, Status: "Unknown", Reason: ReasonValidationsUnknown, Message: "The agent's validations have not yet been calculated"}
	}
	out := []cond{{Type: CondSpecSynced, Status: "True", Reason: "SyncOK", Message: "The Spec has been successfully applied"}, conn}
	if !unbinding(agent) { // syncBindings owns Validated while the host is on its way out
		out = append(out, valid)
	}
	if unstructuredcond.Raw(agent, CondBound) == nil {
		out = append(out,
			cond{Type: CondBound, Status: "False", Reason: ReasonUnbound, Message: "The agent is not bound to any cluster deployment"},
			cond{Type: CondInstalled, Status: "False", Reason: ReasonInstallationNotStarted, Message: "The installation has not yet started"},
		)
	}
	if !unstructuredcond.IsTrue(agent, CondBound) && !unbinding(agent) {
		approved, _, _ := unstructured.NestedBool(agent.Object, "spec", "approved")
		out = append(out, requirementsMet(approved))
	}
	return out
}

// updateAgentStatus keeps the Agents the world registered current: Connected follows the VM's
// power state/existence, Validated turns True after ValidationDelay, RequirementsMet follows approval.
func (d *Driver) updateAgentStatus(ctx context.Context) error {
	d.stateMu.Lock()
	tracked := len(d.registeredAt)
	d.stateMu.Unlock()
	if tracked == 0 {
		return nil
	}
	now := d.now()
	// One list instead of one read per Agent: the benches track a thousand.
	all, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	byKey := make(map[types.NamespacedName]*unstructured.Unstructured, len(all))
	for _, a := range all {
		byKey[client.ObjectKeyFromObject(a)] = a
	}
	type update struct {
		agent     *unstructured.Unstructured
		connected bool
	}
	var updates []update
	d.stateMu.Lock()
	biosOf := make(map[types.NamespacedName]string, len(d.registered))
	for bios, k := range d.registered {
		biosOf[k] = bios
	}
	for key, at := range d.registeredAt {
		agent, ok := byKey[key]
		if !ok {
			if d.inScope(key.Namespace) {
				delete(d.registeredAt, key)
			}
			continue
		}
		connected := unstructuredcond.IsTrue(agent, CondConnected)
		if d.vmsListed {
			_, connected = d.vms[biosOf[key]]
		}
		if conds := d.agentConditions(agent, connected, at, now); unstructuredcond.WouldChange(agent, now, conds...) {
			agent = agent.DeepCopy() // the list may be a shared cache
			unstructuredcond.Set(agent, now, conds...)
			updates = append(updates, update{agent: agent, connected: connected})
		}
	}
	d.stateMu.Unlock()
	return d.forEach(ctx, len(updates), func(ctx context.Context, i int) error {
		u := updates[i]
		if err := d.c.Status().Update(ctx, u.agent); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		d.wrote()
		if !u.connected {
			d.log.Info("agent disconnected (VM gone or off)", "agent", client.ObjectKeyFromObject(u.agent))
		}
		return nil
	})
}

// HostPoweredOn reports whether the last registration pass saw the VM with that BIOS UUID powered on:
// a test that powers a VM off waits for it before the host's next power-on counts as a boot.
func (d *Driver) HostPoweredOn(biosUUID string) bool {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	_, on := d.vms[strings.ToLower(biosUUID)]
	return on && d.vmsListed
}
