package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/internal/redact"
)

const redacted = redact.Mask

// scrubText is the operator's redaction engine (internal/redact: URL user info, queries and token
// segments, credential pairs, Bearer/Basic credentials, JWTs, PEM private keys): the archive hides the
// same secret forms as the operator's own conditions, Events and logs.
func scrubText(s string) string { return redact.String(s) }

// redactTree scrubs every regular file under dir in place: Secrets in YAML or JSON (single objects or
// lists, e.g. from oc adm inspect) lose their data, and all text is scrubbed. It returns how many files
// changed.
func redactTree(dir string) (int, error) {
	changed := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := b
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			out = redactSecretDocuments(out)
		}
		out = []byte(scrubText(string(out)))
		if bytes.Equal(out, b) {
			return nil
		}
		changed++
		return os.WriteFile(path, out, 0o644)
	})
	return changed, err
}

// redactSecretDocuments replaces the data of every Secret in a YAML stream (or JSON document, a YAML
// subset) with REDACTED values; documents without a Secret are kept byte for byte.
func redactSecretDocuments(b []byte) []byte {
	docs := bytes.Split(b, []byte("\n---"))
	for i, doc := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil || obj == nil {
			continue
		}
		if !redactSecrets(obj) {
			continue
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			docs[i] = []byte("# " + redacted + ": a Secret that could not be rewritten\n")
			continue
		}
		if i > 0 {
			out = append([]byte("\n"), out...)
		}
		docs[i] = out
	}
	return bytes.Join(docs, []byte("\n---"))
}

// redactSecrets blanks the values of a Secret, or of the Secrets in a List; it reports a change.
func redactSecrets(obj map[string]any) bool {
	changed := false
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok && redactSecrets(m) {
				changed = true
			}
		}
	}
	if obj["kind"] != "Secret" {
		return changed
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := obj[field].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			if v != redacted {
				m[k] = redacted
				changed = true
			}
		}
	}
	if a, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := a["annotations"].(map[string]any); ok {
			if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
				ann["kubectl.kubernetes.io/last-applied-configuration"] = redacted
				changed = true
			}
		}
	}
	return changed
}
