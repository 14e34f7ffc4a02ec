// Package app builds the operator's controller-runtime manager: the controllers, their cache and
// client settings, leader election, the health checks and the console dashboard installer. cmd/ runs it from flags; the test harness
// runs the same one in process, so tests exercise the manager the binary runs.
//
// One test seam lives here, compiled only with the build tag crashpoints (test/chaos's manager binary):
// with AGENT_FORGE_CRASHPOINT_SOCKET (CrashPointSocketEnv) set, every crash point is announced on that
// unix socket and waits for an answer, so test/chaos can SIGKILL the real binary there (crashseam.go).
// The shipped build (`make build`, the Dockerfile) has no such code (crashseam_off.go).
package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/dashboard"
	"github.com/containeroo/agent-forge-operator/internal/liveness"
	"github.com/containeroo/agent-forge-operator/internal/tlsprofile"
)

// ReconcilersCheck names the healthz check that fails while a reconcile is stuck (see internal/liveness).
const ReconcilersCheck = "reconcilers"

// Options configure New.
type Options struct {
	// Scheme defaults to Scheme().
	Scheme *runtime.Scheme
	// Metrics configures the metrics endpoint ("0" as BindAddress turns it off).
	Metrics metricsserver.Options
	// HealthProbeBindAddress serves /healthz and /readyz ("0" or empty: off).
	HealthProbeBindAddress string
	// LeaderElection makes only one replica act, through the Lease controllers.LeaderElectionID in
	// LeaderElectionNamespace (empty: the pod's namespace).
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaderElectionTimings default to OpenShift's (DefaultLeaderElectionTimings).
	LeaderElectionTimings LeaderElectionTimings
	// WatchNamespaces restricts the cache to these namespaces (an OperatorGroup-scoped install); empty: all.
	WatchNamespaces []string
	// TLSOpts apply to the webhook server (none is registered today; kept consistent with metrics).
	TLSOpts []func(*tls.Config)
	// ClusterTLSProfile makes the metrics and webhook servers follow OpenShift's cluster-wide TLS
	// security profile (APIServer "cluster"; internal/tlsprofile), read before they start and
	// re-read every TLSProfileCheckInterval (default 1m): a change stops the manager so that the
	// process restarts with it. Off, or not on OpenShift: Go's defaults.
	ClusterTLSProfile       bool
	TLSProfileCheckInterval time.Duration
	// Controllers are the controllers' own options.
	Controllers controllers.Options
	// DashboardInterval is how often the console dashboard ConfigMap is checked (default
	// dashboard.DefaultInterval); the installer runs on Controllers.Clock.
	DashboardInterval time.Duration
	// SkipNameValidation lets a process build a second manager with the same controller names (a test
	// that restarts the operator in process).
	SkipNameValidation bool
}

// LeaderElectionTimings are the Lease's duration, the leader's renew deadline and the candidates'
// retry period. A zero field takes its default.
type LeaderElectionTimings struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultLeaderElectionTimings are OpenShift's for its operators (library-go's
// LeaderElectionDefaulting): a leader keeps acting through a 60 s API server outage or a rolling
// kube-apiserver upgrade instead of restarting, and a new leader takes over at most 137 s after the
// old one died without releasing (a clean stop releases the Lease at once).
var DefaultLeaderElectionTimings = LeaderElectionTimings{LeaseDuration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 26 * time.Second}

func (t LeaderElectionTimings) withDefaults() LeaderElectionTimings {
	d := DefaultLeaderElectionTimings
	if t.LeaseDuration > 0 {
		d.LeaseDuration = t.LeaseDuration
	}
	if t.RenewDeadline > 0 {
		d.RenewDeadline = t.RenewDeadline
	}
	if t.RetryPeriod > 0 {
		d.RetryPeriod = t.RetryPeriod
	}
	return d
}

// Validate refuses timings leader election would misbehave with (client-go requires
// LeaseDuration > RenewDeadline > RetryPeriod * 1.2).
func (t LeaderElectionTimings) Validate() error {
	t = t.withDefaults()
	if t.LeaseDuration <= t.RenewDeadline {
		return fmt.Errorf("leader election: the lease duration (%s) must be longer than the renew deadline (%s)", t.LeaseDuration, t.RenewDeadline)
	}
	if float64(t.RenewDeadline) <= 1.2*float64(t.RetryPeriod) {
		return fmt.Errorf("leader election: the renew deadline (%s) must be longer than 1.2 times the retry period (%s)", t.RenewDeadline, t.RetryPeriod)
	}
	return nil
}

// Scheme holds client-go's types and the operator's API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(afv1.AddToScheme(s))
	return s
}

// New builds the manager with the controllers set up and the health checks added; Start runs it.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme := o.Scheme
	if scheme == nil {
		scheme = Scheme()
	}
	timings := o.LeaderElectionTimings.withDefaults()
	if err := timings.Validate(); err != nil {
		return nil, err
	}
	var profileWatcher *tlsprofile.Watcher
	if o.ClusterTLSProfile {
		w, err := applyClusterTLSProfile(cfg, scheme, &o)
		if err != nil {
			return nil, err
		}
		profileWatcher = w
	}
	var controllerCfg config.Controller
	if o.SkipNameValidation {
		controllerCfg.SkipNameValidation = ptr.To(true)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       o.Metrics,
		WebhookServer:                 webhook.NewServer(webhook.Options{TLSOpts: o.TLSOpts}),
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              controllers.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &timings.LeaseDuration,
		RenewDeadline:                 &timings.RenewDeadline,
		RetryPeriod:                   &timings.RetryPeriod,
		Cache:                         cacheOptions(o.WatchNamespaces),
		Client:                        controllers.ClientOptions(),
		Controller:                    controllerCfg,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	ctrlOpts := o.Controllers
	if ctrlOpts.Liveness == nil {
		// The real clock: pass deadlines are real time, whatever clock the controllers decide on.
		ctrlOpts.Liveness = liveness.NewTracker(clock.RealClock{}, liveness.DefaultGraceFactor)
	}
	if ctrlOpts.CrashPoint == nil {
		// Only in a crashpoints build with AGENT_FORGE_CRASHPOINT_SOCKET set (a crash campaign): nil otherwise.
		ctrlOpts.CrashPoint = crashSeamFromEnv()
	}
	ctrlOpts.LeaderElection = o.LeaderElection
	if ctrlOpts.Namespace == "" {
		ctrlOpts.Namespace = ownNamespace(o.LeaderElectionNamespace)
	}
	if err := controllers.Setup(mgr, ctrlOpts); err != nil {
		return nil, fmt.Errorf("setting up the controllers: %w", err)
	}
	if profileWatcher != nil {
		profileWatcher.Reader = mgr.GetAPIReader()
		if err := mgr.Add(profileWatcher); err != nil {
			return nil, fmt.Errorf("adding the TLS profile watcher: %w", err)
		}
	}
	// The console dashboard: written by the leader where OpenShift's console reads it, when RBAC allows.
	var dashClock clock.WithTicker = clock.RealClock{}
	if ctrlOpts.Clock != nil {
		dashClock = ctrlOpts.Clock
	}
	if err := mgr.Add(&dashboard.Installer{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Clock: dashClock,
		Interval: o.DashboardInterval, Log: ctrl.Log.WithName("dashboard")}); err != nil {
		return nil, fmt.Errorf("adding the console dashboard installer: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	// Liveness also fails while a pool or VsphereAgent pass runs beyond twice its pass timeout: its
	// worker is stuck where no deadline reaches, and only a restart frees it.
	if err := mgr.AddHealthzCheck(ReconcilersCheck, ctrlOpts.Liveness.Check); err != nil {
		return nil, fmt.Errorf("adding the reconcilers health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck(CachesCheck, cachesSynced(mgr.GetCache())); err != nil {
		return nil, fmt.Errorf("adding the caches ready check: %w", err)
	}
	return mgr, nil
}

// serviceAccountNamespaceFile is where a pod's namespace is mounted (controller-runtime's leader election
// reads the same file when no namespace is given).
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is the namespace of the manager's own Lease: the flag's, else the pod's (empty outside a
// pod: every Lease then counts as another manager's).
func ownNamespace(leaderElectionNamespace string) string {
	if leaderElectionNamespace != "" {
		return leaderElectionNamespace
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// applyClusterTLSProfile reads the cluster's TLS security profile and appends it to the metrics and
// webhook servers' TLS options; the returned watcher (its Reader still to be set) restarts the process
// when the profile changes.
func applyClusterTLSProfile(cfg *rest.Config, scheme *runtime.Scheme, o *Options) (*tlsprofile.Watcher, error) {
	log := ctrl.Log.WithName("tls-profile")
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("a client to read the cluster's TLS security profile: %w", err)
	}
	profile, src, err := tlsprofile.Read(context.Background(), c)
	if err != nil {
		log.Error(err, "using OpenShift's default TLS security profile until the cluster's can be read", "profile", profile.String())
	}
	if src == tlsprofile.SourceNotOpenShift {
		log.Info("no cluster TLS security profile (not OpenShift): the servers use Go's TLS defaults")
	} else {
		log.Info("the metrics server follows the cluster's TLS security profile", "profile", profile.String(), "source", src,
			"unsupportedCiphers", profile.Unsupported)
		apply := profile.Apply
		o.Metrics.TLSOpts = append(slices.Clone(o.Metrics.TLSOpts), apply)
		o.TLSOpts = append(slices.Clone(o.TLSOpts), apply)
	}
	interval := o.TLSProfileCheckInterval
	if interval <= 0 {
		interval = time.Minute
	}
	return &tlsprofile.Watcher{Applied: profile, Source: src, Interval: interval, Log: log}, nil
}
