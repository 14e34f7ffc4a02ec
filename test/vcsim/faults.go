package vcsim

// Fault rules of a simulator in its own process. A rule crosses as JSON (its fault as VMOMI JSON); its
// filter callbacks stay in the test process, which serves them on a loopback callback endpoint that the
// simulator asks, by callback ID, each time the rule's method, object type and object name match.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// RemoteObject is what a fault rule's filter callback receives when the simulator runs in its own
// process: the object's reference and name only (not the simulator's object).
type RemoteObject struct {
	Ref  types.ManagedObjectReference
	Name string
}

// Reference implements mo.Reference.
func (o RemoteObject) Reference() types.ManagedObjectReference { return o.Ref }

// filterReq asks the test process whether callback ID matches an object.
type filterReq struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Value string `json:"value"`
	Name  string `json:"name,omitempty"`
}

type filterResp struct {
	Match bool `json:"match"`
}

// remoteFaults is Faults of a simulator in its own process.
type remoteFaults struct{ e *Env }

// AddFaultRule sends the rule to the simulator process. MaxCount and SkipCount of a rule with
// Probability 1 are counted exactly there, also under concurrent calls (the simulator's own counters are
// not synchronized). Filter callbacks receive a RemoteObject.
func (f remoteFaults) AddFaultRule(r *simulator.FaultInjectionRule) {
	raw, err := encodeFault(r.Fault)
	if err != nil {
		panic(err)
	}
	w := ruleReq{MethodName: r.MethodName, ObjectType: r.ObjectType, ObjectName: r.ObjectName, Probability: r.Probability,
		FaultType: int(r.FaultType), Message: r.Message, Fault: raw, Delay: r.Delay, MaxCount: r.MaxCount,
		SkipCount: r.SkipCount, Enabled: r.Enabled}
	if r.InclusionPropertyFilter != nil || r.ExclusionPropertyFilter != nil {
		if w.Callback, w.Token, err = f.e.callbacks.start(); err != nil {
			panic(err)
		}
		w.Include = f.e.callbacks.register(r.InclusionPropertyFilter)
		w.Exclude = f.e.callbacks.register(r.ExclusionPropertyFilter)
	}
	f.e.ctl.must("faults/add", w, nil)
}

// ClearFaultRules removes every rule and forgets their callbacks.
func (f remoteFaults) ClearFaultRules() {
	f.e.ctl.must("faults/clear", empty{}, nil)
	f.e.callbacks.clear()
}

// callbacks serves the fault rules' filter callbacks to the simulator process.
type callbacks struct {
	once  sync.Once
	err   error
	srv   *http.Server
	url   string
	token string

	mu   sync.Mutex
	next int
	fns  map[string]simulator.FaultFilterCallback

	vmCall atomic.Pointer[func(VMCall)] // OnVMCall's callback (vmhooks.go)
}

// start starts the callback endpoint on first use and returns its URL and token.
func (c *callbacks) start() (string, string, error) {
	c.once.Do(func() {
		tok := make([]byte, 16)
		if _, c.err = rand.Read(tok); c.err != nil {
			return
		}
		var ln net.Listener
		if ln, c.err = net.Listen("tcp", "127.0.0.1:0"); c.err != nil {
			return
		}
		c.token, c.url = hex.EncodeToString(tok), "http://"+ln.Addr().String()
		mux := http.NewServeMux()
		mux.HandleFunc("POST /filter", c.serve)
		mux.HandleFunc("POST /vmcall", c.serveVMCall)
		c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = c.srv.Serve(ln) }()
	})
	return c.url, c.token, c.err
}

// register keeps fn and returns its ID ("" for nil).
func (c *callbacks) register(fn simulator.FaultFilterCallback) string {
	if fn == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fns == nil {
		c.fns = map[string]simulator.FaultFilterCallback{}
	}
	c.next++
	id := strconv.Itoa(c.next)
	c.fns[id] = fn
	return id
}

func (c *callbacks) clear() {
	c.mu.Lock()
	c.fns = nil
	c.mu.Unlock()
}

func (c *callbacks) close() {
	if c.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.srv.Shutdown(ctx)
	}
}

func (c *callbacks) authorized(r *http.Request) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+c.token)) == 1
}

func (c *callbacks) serve(w http.ResponseWriter, r *http.Request) {
	if !c.authorized(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var req filterReq
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	fn := c.fns[req.ID]
	c.mu.Unlock()
	// A cleared rule's callback no longer matches anything.
	res := filterResp{Match: fn != nil && fn(RemoteObject{Ref: types.ManagedObjectReference{Type: req.Type, Value: req.Value}, Name: req.Name})}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// rule builds the simulator rule in the simulator process; ask evaluates a callback in the test process.
func (w ruleReq) rule(ask func(url, token, id string, obj mo.Reference) bool) (*simulator.FaultInjectionRule, error) {
	f, err := decodeFault(w.Fault)
	if err != nil {
		return nil, err
	}
	rule := &simulator.FaultInjectionRule{MethodName: w.MethodName, ObjectType: w.ObjectType, ObjectName: w.ObjectName,
		Probability: w.Probability, FaultType: simulator.FaultType(w.FaultType), Message: w.Message, Fault: f,
		Delay: w.Delay, MaxCount: w.MaxCount, SkipCount: w.SkipCount, Enabled: w.Enabled}
	filter := func(id string) simulator.FaultFilterCallback {
		if id == "" {
			return nil
		}
		return func(obj mo.Reference) bool { return ask(w.Callback, w.Token, id, obj) }
	}
	inc, exc := filter(w.Include), filter(w.Exclude)
	rule.InclusionPropertyFilter, rule.ExclusionPropertyFilter = inc, exc
	if w.Probability < 1 || (w.MaxCount == 0 && w.SkipCount == 0) {
		return rule, nil
	}
	// Exact counts: the simulator increments its counters under a read lock, so concurrent calls can
	// both pass MaxCount. Count here, under a mutex, after the callbacks (the simulator's order).
	var mu sync.Mutex
	skipped, fired := 0, 0
	exhausted := func() bool { mu.Lock(); defer mu.Unlock(); return fired >= w.MaxCount && w.MaxCount > 0 }
	rule.MaxCount, rule.SkipCount, rule.ExclusionPropertyFilter = 0, 0, nil
	rule.InclusionPropertyFilter = func(obj mo.Reference) bool {
		if exhausted() || (inc != nil && !inc(obj)) || (exc != nil && exc(obj)) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if skipped < w.SkipCount {
			skipped++
			return false
		}
		if w.MaxCount > 0 && fired >= w.MaxCount {
			return false
		}
		fired++
		return true
	}
	return rule, nil
}

// ask is the simulator process's side of a filter callback: no answer means no match (no fault).
func (c *controller) ask(url, token, id string, obj mo.Reference) bool {
	req := filterReq{ID: id}
	if obj != nil {
		ref := obj.Reference()
		req.Type, req.Value = ref.Type, ref.Value
		if e, ok := obj.(mo.Entity); ok {
			req.Name = e.Entity().Name
		}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/filter", bytes.NewReader(body))
	if err != nil {
		return false
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.client.Do(hr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vcsim: fault filter callback %s: %v\n", id, err)
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	var res filterResp
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&res) != nil {
		fmt.Fprintf(os.Stderr, "vcsim: fault filter callback %s: %s\n", id, resp.Status)
		return false
	}
	return res.Match
}
