package olm

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// csv is the part of a ClusterServiceVersion these tests read.
type csv struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Version        string `json:"version"`
		MinKubeVersion string `json:"minKubeVersion"`
		Maturity       string `json:"maturity"`
		RelatedImages  []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"relatedImages"`
		Icon []struct {
			Base64Data string `json:"base64data"`
			MediaType  string `json:"mediatype"`
		} `json:"icon"`
		Install struct {
			Spec struct {
				Deployments []struct {
					Name string                `json:"name"`
					Spec appsv1.DeploymentSpec `json:"spec"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
		CustomResourceDefinitions struct {
			Owned []ownedCRD `json:"owned"`
		} `json:"customresourcedefinitions"`
	} `json:"spec"`
}

type ownedCRD struct {
	Name              string       `json:"name"`
	Kind              string       `json:"kind"`
	Version           string       `json:"version"`
	DisplayName       string       `json:"displayName"`
	SpecDescriptors   []descriptor `json:"specDescriptors"`
	StatusDescriptors []descriptor `json:"statusDescriptors"`
}

type descriptor struct {
	Path         string   `json:"path"`
	DisplayName  string   `json:"displayName"`
	Description  string   `json:"description"`
	XDescriptors []string `json:"x-descriptors"`
}

// bundle is an unpacked registry+v1 bundle directory.
type bundle struct {
	dir  string
	csv  csv
	crds map[string]*apiextensionsv1.CustomResourceDefinition // by CRD name
}

// repoPath joins elements onto the repository root.
func repoPath(elem ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{root}, elem...)...), nil
}

// loadBundle reads the CSV and CRDs of the bundle in dir (its manifests/ folder).
func loadBundle(dir string) (*bundle, error) {
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	if err != nil {
		return nil, err
	}
	b := &bundle{dir: dir, crds: map[string]*apiextensionsv1.CustomResourceDefinition{}}
	var csvs int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		switch meta.Kind {
		case "ClusterServiceVersion":
			csvs++
			if err := yaml.Unmarshal(data, &b.csv); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(data, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			b.crds[crd.Name] = crd
		}
	}
	if csvs != 1 {
		return nil, fmt.Errorf("%s: want exactly one ClusterServiceVersion, found %d", dir, csvs)
	}
	if len(b.crds) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinitions", dir)
	}
	return b, nil
}

// schemaPaths lists every field path below s the way CSV descriptors spell them: "a.b", arrays of
// objects as "a[0].b". Maps (additionalProperties) and arrays of scalars are leaves.
func schemaPaths(s apiextensionsv1.JSONSchemaProps, prefix string) []string {
	var out []string
	for name, prop := range s.Properties {
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		out = append(out, p)
		switch {
		case prop.Type == "object" && len(prop.Properties) > 0:
			out = append(out, schemaPaths(prop, p)...)
		case prop.Type == "array" && prop.Items != nil && prop.Items.Schema != nil && len(prop.Items.Schema.Properties) > 0:
			out = append(out, schemaPaths(*prop.Items.Schema, p+"[0]")...)
		}
	}
	sort.Strings(out)
	return out
}

// servedSchema returns the openAPIV3Schema of the CRD's storage version.
func servedSchema(crd *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.JSONSchemaProps, string, error) {
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return *v.Schema.OpenAPIV3Schema, v.Name, nil
		}
	}
	return apiextensionsv1.JSONSchemaProps{}, "", fmt.Errorf("CRD %s has no storage version with a schema", crd.Name)
}

// descriptorsByPath indexes descriptors by path.
func descriptorsByPath(ds []descriptor) map[string]descriptor {
	out := make(map[string]descriptor, len(ds))
	for _, d := range ds {
		out[d.Path] = d
	}
	return out
}

func hasX(d descriptor, want string) bool {
	for _, x := range d.XDescriptors {
		if x == want {
			return true
		}
	}
	return false
}
