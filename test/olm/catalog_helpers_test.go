package olm

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// fbcObject is one document of a file-based catalog (olm.package, olm.channel or olm.bundle).
type fbcObject struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	Package        string `json:"package"`
	DefaultChannel string `json:"defaultChannel"`
	Image          string `json:"image"`
	Entries        []struct {
		Name      string   `json:"name"`
		Replaces  string   `json:"replaces"`
		Skips     []string `json:"skips"`
		SkipRange string   `json:"skipRange"`
	} `json:"entries"`
	Properties []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties"`
	RelatedImages []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	} `json:"relatedImages"`
}

// bundleObjects decodes the olm.bundle.object properties of an olm.bundle entry (the manifests OLM creates, in
// the order it creates them).
func bundleObjects(o fbcObject) ([][]byte, error) {
	var out [][]byte
	for _, p := range o.Properties {
		if p.Type != "olm.bundle.object" {
			continue
		}
		var v struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return nil, err
		}
		raw, err := base64.StdEncoding.DecodeString(v.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

// catalogBundleCSV returns the ClusterServiceVersion an olm.bundle entry carries.
func catalogBundleCSV(o fbcObject) (*csv, error) {
	objs, err := bundleObjects(o)
	if err != nil {
		return nil, err
	}
	for _, raw := range objs {
		var c struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(raw, &c) == nil && c.Kind == "ClusterServiceVersion" {
			out := &csv{}
			return out, json.Unmarshal(raw, out)
		}
	}
	return nil, fmt.Errorf("catalog bundle %s carries no ClusterServiceVersion", o.Name)
}

// loadCatalog reads every document of the YAML files in dir.
func loadCatalog(dir string) ([]fbcObject, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []fbcObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			var o fbcObject
			if err := yaml.Unmarshal(doc, &o); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if o.Schema != "" {
				out = append(out, o)
			}
		}
	}
	return out, nil
}
