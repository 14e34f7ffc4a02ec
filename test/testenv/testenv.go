// Package testenv starts a real kube-apiserver + etcd (controller-runtime envtest) with the operator's
// CRDs and the external CRD fixtures installed. Used by tests, the demo and the benchmarks.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/restconfig"
)

// RepoRoot finds the repository root by walking up to go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Options selects what the environment installs.
type Options struct {
	// WithoutExternalCRDs skips the Agent/InfraEnv/AgentMachine/Machine/NodePool/HostedCluster fixtures.
	WithoutExternalCRDs bool
	// WithoutOwnCRDs skips config/crd/bases: something under test installs our CRDs itself (OLM, from
	// the bundle).
	WithoutOwnCRDs bool
	// ExtraCRDPaths are installed too.
	ExtraCRDPaths []string
	// LegacyAgentProvider installs the AgentMachine CRD of older Agent CAPI providers (CAPI v1beta1
	// conditions with severity; message and reason minLength 1) from test/crds/legacy-provider instead of
	// the current one (metav1.Condition, since cluster-api-provider-agent 19c244c). Ignored with
	// WithoutExternalCRDs.
	LegacyAgentProvider bool
}

// agentMachineCRDFile is the AgentMachine fixture's file name, in test/crds (current provider) and in
// test/crds/legacy-provider (older providers).
const agentMachineCRDFile = "capi-provider.agent-install.openshift.io_agentmachines.yaml"

// externalCRDPaths lists what envtest installs from test/crds: the folder itself (envtest reads the files
// directly in it, not its subfolders), or with legacy its files one by one, the AgentMachine fixture taken
// from legacy-provider instead.
func externalCRDPaths(root string, legacy bool) ([]string, error) {
	dir := filepath.Join(root, "test", "crds")
	if !legacy {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if e.IsDir() || e.Name() == agentMachineCRDFile {
			continue
		}
		if ext := filepath.Ext(e.Name()); ext == ".yaml" || ext == ".yml" || ext == ".json" {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return append(paths, filepath.Join(dir, "legacy-provider", agentMachineCRDFile)), nil
}

// Env is a running API server.
type Env struct {
	*envtest.Environment
	Config *rest.Config
	Scheme *runtime.Scheme
}

// Scheme returns a scheme with client-go types, CustomResourceDefinitions and our API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := afv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// AssetsDir returns KUBEBUILDER_ASSETS, building the assets with hack/envtest-assets.sh if unset.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "envtest-assets.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building envtest assets: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// Start starts the API server and installs the CRDs.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	var paths []string
	if !opts.WithoutOwnCRDs {
		paths = append(paths, filepath.Join(root, "config", "crd", "bases"))
	}
	if !opts.WithoutExternalCRDs {
		external, err := externalCRDPaths(root, opts.LegacyAgentProvider)
		if err != nil {
			return nil, err
		}
		paths = append(paths, external...)
	}
	paths = append(paths, opts.ExtraCRDPaths...)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
	}
	// OpenShift enables OwnerReferencesPermissionEnforcement: setting blockOwnerDeletion on an owner
	// reference needs "update" on the owner's finalizers subresource. Without it here, a role missing
	// that grant would pass every test and fail on a real hub.
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	// Every client built from the environment's config (fixtures, the world driver, the operator's
	// identity) writes with fieldValidation=Strict: a field the served schema does not declare is an
	// error in tests, where a real hub would drop it silently.
	if err := strict(cfg); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Scheme: env.Scheme}, nil
}

func strict(cfg *rest.Config) error {
	return restconfig.WithFieldValidation(cfg, metav1.FieldValidationStrict)
}

// StartForTest starts an API server for one Go test (stopped at its cleanup) and returns it with a
// client (watches included) built from its config.
func StartForTest(t testing.TB, opts Options) (*Env, client.WithWatch) {
	t.Helper()
	env, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}
