package vcsim

// VM call hooks: a callback run inside the simulator at the moment a VM is created or destroyed, before
// the call does anything (the call waits for it). The crash campaign (test/chaos) checks each destroy
// against the live Machines there, instead of sampling the world afterwards. In its own process the
// simulator asks the test process over the fault rules' callback endpoint (POST /vmcall).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Methods a VM call hook sees.
const (
	MethodDestroyVM = "Destroy_Task"  // on a VirtualMachine
	MethodCreateVM  = "CreateVM_Task" // on a Folder; the VM fields come from the config spec
	// MethodReconfigVM is ReconfigVM_Task on a VirtualMachine (an ISO ejection is one): the campaign
	// checks that no copy of a pool VM is ever reconfigured.
	MethodReconfigVM = "ReconfigVM_Task"
)

// VMCall describes one VM call at the moment the simulator received it.
type VMCall struct {
	Method string `json:"method"`
	// Ref is the VM's managed object reference value (Destroy_Task and ReconfigVM_Task).
	Ref  string `json:"ref,omitempty"`
	Name string `json:"name"`
	// InstanceUUID and BIOSUUID identify the VM (CreateVM_Task: as requested, BIOSUUID may be empty).
	InstanceUUID string `json:"instanceUUID,omitempty"`
	BIOSUUID     string `json:"biosUUID,omitempty"`
	// OwnerUID and PoolUID are the operator's ownership marker in extraConfig ("" when absent).
	OwnerUID string `json:"ownerUID,omitempty"`
	PoolUID  string `json:"poolUID,omitempty"`
}

type vmHookReq struct {
	Callback string `json:"callback"`
	Token    string `json:"token"`
}

// OnVMCall installs fn (nil removes it), called at every Destroy_Task and ReconfigVM_Task of a
// VirtualMachine and every CreateVM_Task before the simulator runs it; the call waits until fn returns (bounded at 10 s out of
// process: a test process that does not answer lets the call go on). fn never changes the call.
func (e *Env) OnVMCall(fn func(VMCall)) {
	if e.ctl == nil {
		e.Map().Handler = vmCallHandler(func(c VMCall) {
			if fn != nil {
				fn(c)
			}
		})
		return
	}
	req := vmHookReq{}
	if fn != nil {
		var err error
		if req.Callback, req.Token, err = e.callbacks.start(); err != nil {
			panic(err)
		}
	}
	e.callbacks.vmCall.Store(&fn)
	e.ctl.must("hooks/vm-calls", req, nil)
}

// vmCallHandler is a simulator.Registry Handler that reports VM creates and destroys to report and
// leaves every call unchanged, except clones, completed as vCenter makes them (cloneLikeVCenter).
func vmCallHandler(report func(VMCall)) func(*simulator.Context, *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	return func(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		switch {
		case m.Name == MethodCloneVM:
			cloneLikeVCenter(ctx, m)
		case (m.Name == MethodDestroyVM || m.Name == MethodReconfigVM) && m.This.Type == "VirtualMachine":
			obj := ctx.Map.Get(m.This)
			vm := asVM(obj)
			if vm == nil {
				return nil, nil
			}
			c := VMCall{Method: m.Name, Ref: m.This.Value}
			ctx.Map.WithLock(ctx, obj, func() {
				c.Name = vm.Name
				if vm.Config != nil {
					c.InstanceUUID, c.BIOSUUID = vm.Config.InstanceUuid, vm.Config.Uuid
					c.OwnerUID, c.PoolUID = marker(vm.Config.ExtraConfig)
				}
			})
			report(c)
		case m.Name == MethodCreateVM:
			req, ok := m.Body.(*types.CreateVM_Task)
			if !ok {
				return nil, nil
			}
			c := VMCall{Method: m.Name, Name: req.Config.Name, InstanceUUID: req.Config.InstanceUuid, BIOSUUID: req.Config.Uuid}
			c.OwnerUID, c.PoolUID = marker(req.Config.ExtraConfig)
			report(c)
		}
		return nil, nil
	}
}

func marker(extra []types.BaseOptionValue) (owner, pool string) {
	for _, o := range extra {
		ov := o.GetOptionValue()
		if ov == nil {
			continue
		}
		v, _ := ov.Value.(string)
		switch ov.Key {
		case vsphere.ExtraConfigOwnerUID:
			owner = v
		case vsphere.ExtraConfigPoolUID:
			pool = v
		}
	}
	return owner, pool
}

// vmCallHook is the simulator process's side: the current callback endpoint (nil: none).
type vmCallHook struct {
	target atomic.Pointer[vmHookReq]
	client *http.Client
}

// report posts c to the test process (bounded; no answer lets the call go on).
func (h *vmCallHook) report(c VMCall) {
	t := h.target.Load()
	if t == nil || t.Callback == "" {
		return
	}
	body, err := json.Marshal(c)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Callback+"/vmcall", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+t.Token)
	resp, err := h.client.Do(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vcsim: VM call hook: %v\n", err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// serveVMCall is the test process's side (on the callbacks endpoint).
func (c *callbacks) serveVMCall(w http.ResponseWriter, r *http.Request) {
	if !c.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var call VMCall
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if fn := c.vmCall.Load(); fn != nil && *fn != nil {
		(*fn)(call)
	}
	w.WriteHeader(http.StatusNoContent)
}
