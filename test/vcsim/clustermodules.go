package vcsim

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	// Registers govmomi's cluster-modules endpoint (/rest/vcenter/cluster/modules); its handlers are
	// served behind modulesMux below.
	_ "github.com/vmware/govmomi/vapi/cluster/simulator"
)

// Cluster modules in the simulator: govmomi's vapi/cluster/simulator serves the API but keeps its modules
// in plain maps with no lock, and the operator's VM workers call it concurrently. modulesMux takes its
// handlers (the simulator's Service.HandleFunc hands a pattern to the handler already registered for it,
// when that handler has a HandleFunc method) and serves them one request at a time; it can also answer
// 404 for the whole API, as a vCenter older than 7.0 Update 1 does (SetClusterModulesAPI).

const modulesPath = rest.Path + "/vcenter/cluster/modules"

// modulesMux serializes the cluster-modules handlers and can switch the API off.
type modulesMux struct {
	mu       sync.Mutex
	inner    *http.ServeMux
	disabled atomic.Bool
}

// HandleFunc receives the cluster-modules simulator's handlers (see simulator.Service.HandleFunc).
func (m *modulesMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.inner.HandleFunc(pattern, h)
}

func (m *modulesMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.disabled.Load() {
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inner.ServeHTTP(w, r)
}

// modulesMuxes maps each simulator Service to its modulesMux.
var modulesMuxes sync.Map // *simulator.Service -> *modulesMux

func init() {
	// Runs after the imported endpoints registered theirs (package initialization order), so the
	// cluster-modules handlers are given to this mux when the server starts.
	simulator.RegisterEndpoint(func(s *simulator.Service, r *simulator.Registry) {
		if !r.IsVPX() {
			return
		}
		m := &modulesMux{inner: http.NewServeMux()}
		s.Handle(modulesPath, m)
		s.Handle(modulesPath+"/", m)
		modulesMuxes.Store(s, m)
	})
}

type (
	drsReq struct {
		Cluster string `json:"cluster"`
		Enabled bool   `json:"enabled"`
	}
	apiReq struct {
		Enabled bool `json:"enabled"`
	}
)

// SetDRS turns DRS on or off on the cluster named cluster (configurationEx.drsConfig.enabled).
func (e *Env) SetDRS(cluster string, enabled bool) error {
	if e.ctl != nil {
		return e.ctl.call("cluster/drs", drsReq{Cluster: cluster, Enabled: enabled}, nil)
	}
	return e.withEntity("ClusterComputeResource", cluster, func(obj mo.Entity) {
		cl := obj.(*simulator.ClusterComputeResource)
		cfg, ok := cl.ConfigurationEx.(*types.ClusterConfigInfoEx)
		if !ok {
			cfg = &types.ClusterConfigInfoEx{}
			cl.ConfigurationEx = cfg
		}
		cfg.DrsConfig.Enabled = types.NewBool(enabled)
	})
}

// SetClusterModulesAPI serves the cluster-modules API (true, the default) or answers 404 for it, as a
// vCenter older than 7.0 Update 1 does (false).
func (e *Env) SetClusterModulesAPI(enabled bool) error {
	if e.ctl != nil {
		return e.ctl.call("clustermodules/api", apiReq{Enabled: enabled}, nil)
	}
	if m, ok := modulesMuxes.Load(e.Model.Service); ok {
		m.(*modulesMux).disabled.Store(!enabled)
	}
	return nil
}
