// Command manager runs the agent-forge-operator controllers.
package main

import (
	"crypto/tls"
	"flag"
	"os"
	"slices"
	"strings"
	"time"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/containeroo/agent-forge-operator/cmd/app"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/restconfig"
)

// defaultTrustedCABundle is where the manager Deployment mounts the OpenShift-injected trusted CA bundle
// (config/manager: the trusted-ca-bundle ConfigMap, key ca-bundle.crt); AGENT_FORGE_TRUSTED_CA_BUNDLE
// overrides it.
const defaultTrustedCABundle = "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"

// credentialsSecretNamespacesEnv is the default of --credentials-secret-namespaces: an OLM install sets it
// in the Subscription's spec.config.env (OLM passes no extra flags).
const credentialsSecretNamespacesEnv = "AGENT_FORGE_CREDENTIALS_SECRET_NAMESPACES"

func main() {
	var (
		metricsAddr, probeAddr, leaderElectionNamespace, watchNamespaces        string
		secureMetrics, enableLeaderElection, enableHTTP2, crossNamespaceSecrets bool
		secretNamespaces                                                        string
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address the metrics endpoint binds to (HTTPS when --metrics-secure). \"0\" disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with Kubernetes authentication and authorization.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Enable leader election so only one replica acts.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace).")
	leTimings := app.DefaultLeaderElectionTimings
	flag.DurationVar(&leTimings.LeaseDuration, "leader-elect-lease-duration", leTimings.LeaseDuration, "How long a leader-election Lease is valid without renewal: the longest a new leader waits after the old one died without releasing it (default OpenShift's).")
	flag.DurationVar(&leTimings.RenewDeadline, "leader-elect-renew-deadline", leTimings.RenewDeadline, "How long the leader keeps retrying to renew its Lease before it gives up leadership and exits (default OpenShift's).")
	flag.DurationVar(&leTimings.RetryPeriod, "leader-elect-retry-period", leTimings.RetryPeriod, "How often candidates try to acquire, and the leader to renew, the Lease (default OpenShift's).")
	flag.StringVar(&watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces to watch (pools, Agents, InfraEnvs and control plane namespaces). Empty watches all namespaces.")
	flag.StringVar(&secretNamespaces, "credentials-secret-namespaces", os.Getenv(credentialsSecretNamespacesEnv),
		"Comma-separated namespaces whose Secrets a pool in another namespace may name as its credentialsSecretRef (a pool's own namespace is always allowed). Empty (the default): none. Default from "+credentialsSecretNamespacesEnv+".")
	flag.BoolVar(&crossNamespaceSecrets, "allow-cross-namespace-secrets", false, "Deprecated and ignored: list the allowed namespaces in --credentials-secret-namespaces.")
	var crdPoll time.Duration
	flag.DurationVar(&crdPoll, "external-crd-poll-interval", 30*time.Second, "How often to check for missing HyperShift/CAPI/Assisted Installer CRDs before starting the controllers.")
	var poolPassTimeout, vmPassTimeout time.Duration
	flag.DurationVar(&poolPassTimeout, "pool-pass-timeout", 2*time.Minute, "Deadline of one pool pass's work (vCenter login and calls); a cut pass reports VSphereReachable=False/VCenterTimeout and is retried with backoff. Liveness (/healthz, check \"reconcilers\") fails while a pass runs beyond twice this.")
	flag.DurationVar(&vmPassTimeout, "vm-pass-timeout", 10*time.Minute, "Deadline of one VsphereAgent pass's work (vCenter calls, task waits). Liveness fails while a pass runs beyond twice this.")
	var managerCheck time.Duration
	flag.DurationVar(&managerCheck, "other-manager-check-interval", 30*time.Second, "How often to look for another agent-forge manager's live leader-election Lease in another namespace (upstream's install, a second install); this manager takes no action while one is live.")
	var metricsCertPath, metricsCertName, metricsCertKey string
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "", "Directory holding the metrics serving certificate and key (e.g. an OpenShift service-ca Secret), picked up when they appear and reloaded when they change; until then (or when empty) a self-signed certificate.")
	flag.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt", "Certificate file name in --metrics-cert-path.")
	flag.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "Key file name in --metrics-cert-path.")
	var fieldValidation string
	flag.StringVar(&fieldValidation, "field-validation", "", "fieldValidation directive sent with every write (Strict, Warn or Ignore). Empty keeps the API server's default; tests run with Strict so that a field the served schema lacks fails instead of being dropped.")
	trustedCABundle := defaultTrustedCABundle
	if env := os.Getenv("AGENT_FORGE_TRUSTED_CA_BUNDLE"); env != "" {
		trustedCABundle = env
	}
	flag.StringVar(&trustedCABundle, "trusted-ca-bundle", trustedCABundle, "PEM CA bundle trusted besides the system roots for the ISO download, read again for every download (OpenShift's injected trusted CA bundle). A missing file is no bundle. Default from AGENT_FORGE_TRUSTED_CA_BUNDLE.")
	var tlsProfileFromCluster bool
	var tlsProfileCheck time.Duration
	flag.BoolVar(&tlsProfileFromCluster, "tls-profile-from-cluster", true, "Serve metrics with OpenShift's cluster-wide TLS security profile (APIServer cluster, spec.tlsSecurityProfile; Intermediate when unset); the process restarts when it changes. Not on OpenShift: Go's defaults.")
	flag.DurationVar(&tlsProfileCheck, "tls-profile-check-interval", time.Minute, "How often the cluster's TLS security profile is read again (--tls-profile-from-cluster).")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Enable HTTP/2 for the metrics server (off: CVE-2023-44487 / rapid reset).")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	// Every log line goes through the redaction engine (tokens in error texts, proxy passwords).
	ctrl.SetLogger(redact.Logger(zap.New(zap.UseFlagOptions(&opts))))
	setupLog := ctrl.Log.WithName("setup")
	ctx := ctrl.SetupSignalHandler()
	if crossNamespaceSecrets {
		setupLog.Error(nil, "--allow-cross-namespace-secrets is no longer honoured: a pool may use a Secret of another namespace only when --credentials-secret-namespaces (or "+credentialsSecretNamespacesEnv+") lists that namespace")
	}

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, TLSOpts: tlsOpts}
	if secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
		if metricsCertPath != "" {
			cert, err := newMetricsCertificate(ctx, setupLog, metricsCertPath, metricsCertName, metricsCertKey)
			if err != nil {
				setupLog.Error(err, "unable to set up the metrics serving certificate")
				os.Exit(1)
			}
			metricsOpts.TLSOpts = append(slices.Clone(tlsOpts), func(c *tls.Config) { c.GetCertificate = cert.GetCertificate })
		}
	}

	restConfig := ctrl.GetConfigOrDie()
	if err := restconfig.WithFieldValidation(restConfig, fieldValidation); err != nil {
		setupLog.Error(err, "invalid --field-validation")
		os.Exit(1)
	}
	mgr, err := app.New(restConfig, app.Options{
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          enableLeaderElection,
		LeaderElectionNamespace: leaderElectionNamespace,
		LeaderElectionTimings:   leTimings,
		WatchNamespaces:         splitNamespaces(watchNamespaces),
		TLSOpts:                 tlsOpts,
		ClusterTLSProfile:       tlsProfileFromCluster,
		TLSProfileCheckInterval: tlsProfileCheck,
		Controllers: controllers.Options{Settings: controllers.Settings{CredentialsSecretNamespaces: splitNamespaces(secretNamespaces), CRDPollInterval: crdPoll, TrustedCABundleFile: trustedCABundle,
			PoolPassTimeout: poolPassTimeout, VMPassTimeout: vmPassTimeout, ManagerCheckInterval: managerCheck}},
	})
	if err != nil {
		setupLog.Error(err, "unable to set up the manager")
		os.Exit(1)
	}

	setupLog.Info("starting manager", "trustedCABundle", trustedCABundle, "credentialsSecretNamespaces", splitNamespaces(secretNamespaces))
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

func splitNamespaces(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
