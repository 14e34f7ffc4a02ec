package vcsim

// The simulator in its own process (hack/vcsim): Serve runs the in-process simulator plus a small
// JSON-over-HTTP control endpoint on loopback, so a test process can drive the knobs that need the
// simulator's memory (lock-question VMs, fault rules, counters) while the operator under test talks to
// "vCenter" over a real socket. StartProcess (process.go) is the client side.
//
// Protocol: POST <control>/v1/<op> with a JSON request, "Authorization: Bearer <token>"; 200 with a JSON
// response, or 4xx/5xx with a plain-text error. Faults travel as VMOMI JSON (types.NewJSONEncoder), so
// any vim25 fault round-trips with its type.

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
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/types"
)

// readyPrefix starts the one stdout line the child prints once it serves.
const readyPrefix = "VCSIM-READY "

// ready is the child's announcement: where the SDK and the control endpoint listen.
type ready struct {
	SDK        string `json:"sdk"`
	CABundle   string `json:"caBundle,omitempty"`
	Thumbprint string `json:"thumbprint,omitempty"`
	Control    string `json:"control"`
	Token      string `json:"token"`
}

// Wire messages of the control endpoint.
type (
	uuidReq struct {
		UUID string `json:"uuid"`
	}
	nameReq struct {
		Name string `json:"name"`
	}
	countResp struct {
		Count int `json:"count"`
	}
	idResp struct {
		ID string `json:"id"`
	}
	findResp struct {
		Found      bool   `json:"found"`
		Ref        string `json:"ref,omitempty"`
		Name       string `json:"name,omitempty"`
		PowerState string `json:"powerState,omitempty"`
	}
	doorReq struct {
		UUID   string `json:"uuid"`
		Locked bool   `json:"locked"`
	}
	choicesReq struct {
		UUID    string       `json:"uuid"`
		Choices []LockChoice `json:"choices"`
	}
	answersResp struct {
		Answers []Answer `json:"answers"`
	}
	failTaskReq struct {
		UUID   string          `json:"uuid"`
		Method string          `json:"method"`
		Fault  json.RawMessage `json:"fault"`
	}
	raiseReq struct {
		UUID      string `json:"uuid"`
		MessageID string `json:"messageId"`
		Text      string `json:"text"`
	}
	cdromReq struct {
		UUID string `json:"uuid"`
		Key  int32  `json:"key"`
		ISO  string `json:"iso"`
	}
	// ruleReq is a simulator.FaultInjectionRule; its filter callbacks stay in the test process and are
	// asked over its callback endpoint (Callback, with Token) by ID.
	ruleReq struct {
		MethodName  string          `json:"methodName"`
		ObjectType  string          `json:"objectType"`
		ObjectName  string          `json:"objectName"`
		Probability float64         `json:"probability"`
		FaultType   int             `json:"faultType"`
		Message     string          `json:"message,omitempty"`
		Fault       json.RawMessage `json:"fault,omitempty"`
		Delay       int             `json:"delay,omitempty"`
		MaxCount    int             `json:"maxCount,omitempty"`
		SkipCount   int             `json:"skipCount,omitempty"`
		Enabled     bool            `json:"enabled"`
		Include     string          `json:"include,omitempty"`
		Exclude     string          `json:"exclude,omitempty"`
		Callback    string          `json:"callback,omitempty"`
		Token       string          `json:"token,omitempty"`
	}
	empty struct{}
)

// encodeFault writes a vim25 fault as VMOMI JSON (with its _typeName); nil encodes as null.
func encodeFault(f types.BaseMethodFault) (json.RawMessage, error) {
	if f == nil {
		return json.RawMessage("null"), nil
	}
	var buf bytes.Buffer
	if err := types.NewJSONEncoder(&buf).Encode(f); err != nil {
		return nil, fmt.Errorf("encode fault %T: %w", f, err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// decodeFault reads a fault written by encodeFault.
func decodeFault(raw json.RawMessage) (types.BaseMethodFault, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var f types.BaseMethodFault
	if err := types.NewJSONDecoder(bytes.NewReader(raw)).Decode(&f); err != nil {
		return nil, fmt.Errorf("decode fault: %w", err)
	}
	return f, nil
}

// Serve starts the simulator (Start(opts)) and its control endpoint on loopback, writes one ready line
// (readyPrefix + JSON) to out, and serves until ctx ends; then it stops both. It is the body of the
// hack/vcsim binary.
func Serve(ctx context.Context, opts Options, out io.Writer) error {
	env, err := Start(opts)
	if err != nil {
		return err
	}
	defer env.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("control listener: %w", err)
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		_ = ln.Close()
		return err
	}
	c := &controller{env: env, token: hex.EncodeToString(tok), wrapped: map[string]*VM{},
		client: &http.Client{Transport: &http.Transport{Proxy: nil}}}
	c.vmHook = &vmCallHook{client: c.client}
	env.Map().Handler = vmCallHandler(c.vmHook.report) // reports only once a test process installs a hook
	srv := &http.Server{Handler: c.mux(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	r := ready{SDK: env.URL.String(), CABundle: string(env.Credentials.CABundle), Thumbprint: env.Thumbprint,
		Control: "http://" + ln.Addr().String(), Token: c.token}
	line, err := json.Marshal(r)
	if err == nil {
		_, err = fmt.Fprintf(out, "%s%s\n", readyPrefix, line)
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("announce: %w", err)
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("control endpoint: %w", err)
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	return nil
}

// controller serves the control endpoint of one simulator.
type controller struct {
	env    *Env
	token  string
	client *http.Client // asks the test process's filter callbacks
	vmHook *vmCallHook  // reports VM creates and destroys to the test process (OnVMCall)

	mu      sync.Mutex
	wrapped map[string]*VM // instance UUID -> wrapped VM; kept after the VM is destroyed (answers stay readable)
}

// vm returns the wrapped VM of uuid, wrapping it on first use.
func (c *controller) vm(uuid string) (*VM, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.wrapped[uuid]; ok {
		return v, nil
	}
	v, err := c.env.WrapVM(uuid)
	if err != nil {
		return nil, err
	}
	c.wrapped[uuid] = v
	return v, nil
}

// handle registers op: decode a Req, run f, encode its result.
func handle[Req any](mux *http.ServeMux, c *controller, op string, f func(Req) (any, error)) {
	mux.HandleFunc("POST /v1/"+op, func(w http.ResponseWriter, r *http.Request) {
		want := "Bearer " + c.token
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req Req
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		res, err := f(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	})
}

func (c *controller) mux() *http.ServeMux {
	m := http.NewServeMux()
	e := c.env
	handle(m, c, "vm/find", func(r uuidReq) (any, error) {
		res := findResp{}
		if vm := e.VMByInstanceUUID(r.UUID); vm != nil {
			e.withLock(vm, func() {
				res = findResp{Found: true, Ref: vm.Self.Value, Name: vm.Name, PowerState: string(vm.Runtime.PowerState)}
			})
		}
		return res, nil
	})
	handle(m, c, "vms/count", func(r nameReq) (any, error) { return countResp{e.CountVMsNamed(r.Name)}, nil })
	handle(m, c, "vm/wrap", func(r uuidReq) (any, error) { _, err := c.vm(r.UUID); return empty{}, err })
	handle(m, c, "vm/hide", func(r uuidReq) (any, error) { return empty{}, e.HideVM(r.UUID) })
	handle(m, c, "vm/restore", func(r uuidReq) (any, error) { return empty{}, e.RestoreVM(r.UUID) })
	withVM := func(uuid string, f func(*VM) (any, error)) (any, error) {
		v, err := c.vm(uuid)
		if err != nil {
			return nil, err
		}
		return f(v)
	}
	handle(m, c, "vm/door", func(r doorReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { v.SetDoorLocked(r.Locked); return empty{}, nil })
	})
	handle(m, c, "vm/choices", func(r choicesReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { v.SetLockQuestionChoices(r.Choices); return empty{}, nil })
	})
	handle(m, c, "vm/reconfigures", func(r uuidReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { return countResp{v.Reconfigures()}, nil })
	})
	handle(m, c, "vm/answers", func(r uuidReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { return answersResp{v.Answers()}, nil })
	})
	handle(m, c, "vm/fail-next-task", func(r failTaskReq) (any, error) {
		f, err := decodeFault(r.Fault)
		if err != nil {
			return nil, err
		}
		return withVM(r.UUID, func(v *VM) (any, error) { v.FailNextTask(r.Method, f); return empty{}, nil })
	})
	handle(m, c, "vm/question", func(r uuidReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { return idResp{e.QuestionPending(v)}, nil })
	})
	handle(m, c, "vm/raise-question", func(r raiseReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { return idResp{e.RaiseQuestion(v, r.MessageID, r.Text)}, nil })
	})
	handle(m, c, "vm/cdrom-iso", func(r cdromReq) (any, error) {
		return withVM(r.UUID, func(v *VM) (any, error) { return empty{}, e.SetCDROMISO(v, r.Key, r.ISO) })
	})
	handle(m, c, "faults/add", func(r ruleReq) (any, error) {
		rule, err := r.rule(c.ask)
		if err != nil {
			return nil, err
		}
		e.Model.Service.AddFaultRule(rule)
		return empty{}, nil
	})
	handle(m, c, "hooks/vm-calls", func(r vmHookReq) (any, error) { c.vmHook.target.Store(&r); return empty{}, nil })
	handle(m, c, "faults/clear", func(empty) (any, error) { e.Model.Service.ClearFaultRules(); return empty{}, nil })
	handle(m, c, "privileges/deny", func(r privilegeReq) (any, error) { e.DenyPrivilege(r.Entity, r.PrivID); return empty{}, nil })
	handle(m, c, "privileges/reset", func(empty) (any, error) { e.ResetPrivileges(); return empty{}, nil })
	handle(m, c, "capacity/cluster", func(r clusterCapacityReq) (any, error) {
		return empty{}, e.SetClusterCapacity(r.Cluster, r.Capacity)
	})
	handle(m, c, "capacity/datastore", func(r datastoreSpaceReq) (any, error) {
		return empty{}, e.SetDatastoreSpace(r.Datastore, r.CapacityBytes, r.FreeBytes)
	})
	handle(m, c, "pci/host", func(r hostPCIReq) (any, error) { return empty{}, e.SetHostPCIDevices(r.Host, r.Devices) })
	handle(m, c, "pci/reset", func(empty) (any, error) { return empty{}, e.ResetHostPCIDevices() })
	handle(m, c, "pci/host-devices", func(r nameReq) (any, error) { return e.HostPCIDevicesOf(r.Name) })
	handle(m, c, "cluster/drs", func(r drsReq) (any, error) { return empty{}, e.SetDRS(r.Cluster, r.Enabled) })
	handle(m, c, "clustermodules/api", func(r apiReq) (any, error) { return empty{}, e.SetClusterModulesAPI(r.Enabled) })
	handle(m, c, "privileges/denied", func(r privilegeReq) (any, error) { return privilegesResp{e.DeniedPrivileges(r.Entity)}, nil })
	return m
}

// controlClient calls a child's control endpoint.
type controlClient struct {
	base, token string
	http        *http.Client
}

// call POSTs in to op and decodes the response into out (nil: ignore it).
func (c *controlClient) call(op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/"+op, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("vcsim control %s: %w", op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("vcsim control %s: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("vcsim control %s: %s: %s", op, resp.Status, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// must is call for the test helpers without an error result: a failing control call means the simulator
// process is gone or refused a knob, which no test can carry on from.
func (c *controlClient) must(op string, in, out any) {
	if err := c.call(op, in, out); err != nil {
		panic(err)
	}
}
