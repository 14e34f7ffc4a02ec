package olm

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMinKubeVersionIsTheTestedFloor: the CSV's minKubeVersion is the minor that make test-k8s-floor runs the
// CRD validation cases on (hack/envtest-floor.sh), and the OpenShift versions the bundle is offered on start at
// the OpenShift of that Kubernetes (OpenShift 4.N ships Kubernetes 1.N+13), so neither promises an untested
// cluster.
func TestMinKubeVersionIsTheTestedFloor(t *testing.T) {
	b := loadCurrentBundle(t)
	path, err := repoPath("hack", "envtest-floor.sh")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^export K8S_VERSION=(\d+)\.(\d+)\.\d+ `).FindSubmatch(script)
	if m == nil {
		t.Fatal("hack/envtest-floor.sh exports no K8S_VERSION=<major>.<minor>.<patch>")
	}
	floor := string(m[1]) + "." + string(m[2])
	if want := floor + ".0"; b.csv.Spec.MinKubeVersion != want {
		t.Errorf("CSV minKubeVersion %q, but make test-k8s-floor tests Kubernetes %s: want %s", b.csv.Spec.MinKubeVersion, floor, want)
	}

	annPath, err := repoPath("bundle", "metadata", "annotations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(annPath)
	if err != nil {
		t.Fatal(err)
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &ann); err != nil {
		t.Fatal(err)
	}
	minor, err := strconv.Atoi(string(m[2]))
	if err != nil {
		t.Fatal(err)
	}
	got := ann.Annotations["com.redhat.openshift.versions"]
	if want := fmt.Sprintf("v4.%d", minor-13); got != want {
		t.Errorf("com.redhat.openshift.versions %q, want %s (the OpenShift of Kubernetes %s)", got, want, floor)
	}
	if strings.Contains(got, "-") || strings.Contains(got, ",") {
		t.Errorf("com.redhat.openshift.versions %q caps or lists versions; the floor only sets the lowest", got)
	}
}
