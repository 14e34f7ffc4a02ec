package main

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the repository root: this package lives in hack/imagebuild.
const repoRoot = "../.."

func TestInterpretDockerfile(t *testing.T) {
	cases := []struct {
		name, text string
		args       map[string]string
		check      func(t *testing.T, d *imageDef)
		wantErr    string
	}{{
		name: "labels expand ARG defaults and build args; continuation lines join",
		text: "FROM golang AS builder\nWORKDIR /w\nRUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} \\\n  go build -trimpath -ldflags=\"-s -w\" -o app ./cmd\n" +
			"FROM base:1\nARG VERSION=0.1.0\nARG RELEASE=1\n# comment\nLABEL name=\"a b\" \\\n  version=\"${VERSION}\" release=$RELEASE\n" +
			"COPY --from=builder /w/app /app\nUSER 65532:65532\nENTRYPOINT [\"/app\"]\n",
		args: map[string]string{"RELEASE": "7"},
		check: func(t *testing.T, d *imageDef) {
			want := map[string]string{"name": "a b", "version": "0.1.0", "release": "7"}
			if !reflect.DeepEqual(d.labels, want) {
				t.Errorf("labels %v, want %v", d.labels, want)
			}
			if d.base != "base:1" || d.user != "65532:65532" || !reflect.DeepEqual(d.entrypoint, []string{"/app"}) {
				t.Errorf("base %q user %q entrypoint %v", d.base, d.user, d.entrypoint)
			}
			b := d.builds["builder"]
			if b.pkg != "./cmd" || b.output != "/w/app" || !reflect.DeepEqual(b.flags, []string{"-trimpath", "-ldflags=-s -w"}) {
				t.Errorf("go build %+v", b)
			}
		},
	}, {
		name:    "a build with cgo is refused",
		text:    "FROM golang AS b\nRUN go build -o x .\nFROM scratch\nCOPY --from=b /x /x\n",
		wantErr: "CGO_ENABLED=0",
	}, {
		name:    "a RUN the tool cannot do without an engine fails",
		text:    "FROM base\nRUN apt-get install -y curl\n",
		wantErr: "needs a container engine",
	}, {
		name: "opm's cache pre-build is skipped and said so",
		text: "FROM opm\nENTRYPOINT [\"/bin/opm\"]\nCMD [\"serve\", \"/configs\"]\nRUN [\"/bin/opm\", \"serve\", \"/configs\", \"--cache-only\"]\n",
		check: func(t *testing.T, d *imageDef) {
			if len(d.skipped) != 1 || !d.cmdSet || !d.entrypointSet {
				t.Errorf("skipped %v cmdSet %v", d.skipped, d.cmdSet)
			}
		},
	}, {
		name:    "an unknown instruction fails",
		text:    "FROM base\nHEALTHCHECK NONE\n",
		wantErr: "not supported",
	}, {
		name:    "shell-form ENTRYPOINT is refused",
		text:    "FROM base\nENTRYPOINT /manager\n",
		wantErr: "JSON (exec) form",
	}, {
		name: "chmod is recorded for copied files",
		text: "FROM base\nCOPY a /usr/bin/a\nRUN chmod 0755 /usr/bin/a\n",
		check: func(t *testing.T, d *imageDef) {
			if d.chmods["/usr/bin/a"] != 0o755 {
				t.Errorf("chmods %v", d.chmods)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := interpret(p, c.args)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, d)
		})
	}
}

// TestRepositoryDockerfilesInterpret: every Dockerfile of the repository is understood by the tool, with the
// labels OpenShift's certification checks and the non-root user and entrypoint the CSV's Deployment runs.
func TestRepositoryDockerfilesInterpret(t *testing.T) {
	for imageName, file := range dockerfiles {
		d, err := interpret(filepath.Join(repoRoot, file), nil)
		if err != nil {
			t.Fatalf("%s: %v", imageName, err)
		}
		if imageName == "manager" || imageName == "must-gather" {
			for _, k := range []string{"name", "vendor", "version", "release", "summary", "description",
				"org.opencontainers.image.source", "org.opencontainers.image.licenses", "org.opencontainers.image.version"} {
				if d.labels[k] == "" {
					t.Errorf("%s: label %s missing", imageName, k)
				}
			}
		}
	}
	m, err := interpret(filepath.Join(repoRoot, "Dockerfile"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.user != "65532:65532" {
		t.Errorf("manager user %q, want 65532:65532", m.user)
	}
	if cmd := managerCommand(t); !reflect.DeepEqual(m.entrypoint, cmd) {
		t.Errorf("manager entrypoint %v, the Deployment runs %v", m.entrypoint, cmd)
	}
}

// managerCommand is the manager container's command in config/manager/manager.yaml.
func managerCommand(t *testing.T) []string {
	t.Helper()
	d := managerDeployment(t)
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c.Command
		}
	}
	t.Fatal("config/manager/manager.yaml: no manager container")
	return nil
}

type deployment struct {
	Kind string `json:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Name    string   `json:"name"`
					Command []string `json:"command"`
				} `json:"containers"`
				Affinity struct {
					NodeAffinity struct {
						Required struct {
							Terms []struct {
								Expressions []struct {
									Key    string   `json:"key"`
									Values []string `json:"values"`
								} `json:"matchExpressions"`
							} `json:"nodeSelectorTerms"`
						} `json:"requiredDuringSchedulingIgnoredDuringExecution"`
					} `json:"nodeAffinity"`
				} `json:"affinity"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func managerDeployment(t *testing.T) deployment {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var d deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind == "Deployment" {
			return d
		}
	}
	t.Fatal("config/manager/manager.yaml: no Deployment")
	return deployment{}
}

// TestArchLabelsMatchPlatforms: the CSV (base and generated bundle) declares exactly the platforms the tool
// builds (operatorframework.io/arch.<arch> and os.<os> "supported"), and the Deployment's node affinity allows
// exactly those architectures and operating systems.
func TestArchLabelsMatchPlatforms(t *testing.T) {
	want := map[string]string{}
	var arches, oses []string
	for _, p := range platforms {
		want["operatorframework.io/arch."+p.Architecture] = "supported"
		want["operatorframework.io/os."+p.OS] = "supported"
		arches = append(arches, p.Architecture)
		if !contains(oses, p.OS) {
			oses = append(oses, p.OS)
		}
	}
	for _, f := range []string{"config/manifests/bases/agent-forge-operator.clusterserviceversion.yaml",
		"bundle/manifests/agent-forge-operator.clusterserviceversion.yaml"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		var csv struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(raw, &csv); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for k, v := range csv.Metadata.Labels {
			if strings.HasPrefix(k, "operatorframework.io/arch.") || strings.HasPrefix(k, "operatorframework.io/os.") {
				got[k] = v
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: arch/os labels %v, want %v (the platforms hack/imagebuild builds)", f, got, want)
		}
	}
	affinity := map[string][]string{}
	for _, term := range managerDeployment(t).Spec.Template.Spec.Affinity.NodeAffinity.Required.Terms {
		for _, e := range term.Expressions {
			affinity[e.Key] = append(affinity[e.Key], e.Values...)
		}
	}
	for key, want := range map[string][]string{"kubernetes.io/arch": arches, "kubernetes.io/os": oses} {
		got := affinity[key]
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Deployment affinity %s %v, want %v", key, got, want)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
