package validation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// floorEnv is set by `make test-k8s-floor`, which runs this package against the kube-apiserver of the CSV's
// minKubeVersion (hack/mk/floor.mk) instead of the default envtest assets.
const floorEnv = "AGENT_FORGE_KUBE_FLOOR"

// checkFloor, when floorEnv is set, fails unless the API server is the minor the CSV declares as
// minKubeVersion: the floor run must prove the declared minimum, not whatever KUBEBUILDER_ASSETS held.
func checkFloor(cfg *rest.Config) error {
	if os.Getenv(floorEnv) == "" {
		return nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("asking the API server its version: %w", err)
	}
	minKube, err := csvMinKubeVersion()
	if err != nil {
		return err
	}
	if majorMinor(strings.TrimPrefix(info.GitVersion, "v")) != majorMinor(minKube) {
		return fmt.Errorf("%s is set but the API server is %s, not the CSV's minKubeVersion %s", floorEnv, info.GitVersion, minKube)
	}
	fmt.Fprintf(os.Stderr, "validation: running against kube-apiserver %s (CSV minKubeVersion %s)\n", info.GitVersion, minKube)
	return nil
}

func csvMinKubeVersion() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "agent-forge-operator.clusterserviceversion.yaml"))
	if err != nil {
		return "", err
	}
	var c struct {
		Spec struct {
			MinKubeVersion string `json:"minKubeVersion"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return "", err
	}
	if c.Spec.MinKubeVersion == "" {
		return "", fmt.Errorf("the CSV declares no minKubeVersion")
	}
	return c.Spec.MinKubeVersion, nil
}

// majorMinor keeps "1.29" of "1.29.6".
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
