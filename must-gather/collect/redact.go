package main

import (
	"bytes"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/internal/iso"
)

const redacted = "REDACTED"

var (
	// urlPattern finds URLs in free text (logs, messages, YAML values).
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>\\` + "`" + `]+`)
	// jwtPattern finds JSON Web Tokens (assisted-image-service tokens, service account tokens): three
	// base64url parts, the first a JSON header ("eyJ" is base64 of `{"`).
	jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)
	// credentialPairs finds key=value and key: value pairs of well-known credential names outside URLs.
	credentialPairs = regexp.MustCompile(`(?i)\b(api_key|apikey|access_token|token|password|passwd|secret)(["']?\s*[=:]\s*["']?)([^\s&"',}]+)`)
	// bearer finds Authorization headers.
	bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`)
)

// scrubText removes URL tokens and credentials from text: every URL loses its user info, query and
// fragment and its token path segments (iso.RedactURL, "?REDACTED" marks a removed query), JWTs and
// bearer tokens become REDACTED, and so do the values of credential-named pairs.
func scrubText(s string) string {
	s = urlPattern.ReplaceAllStringFunc(s, func(match string) string {
		// Punctuation that ends a sentence or a message prefix is not part of the URL.
		raw := strings.TrimRight(match, ".,;:)]")
		tail := match[len(raw):]
		return redactURL(raw) + tail
	})
	s = jwtPattern.ReplaceAllString(s, redacted)
	s = bearer.ReplaceAllString(s, "${1}"+redacted)
	return credentialPairs.ReplaceAllStringFunc(s, func(m string) string {
		sub := credentialPairs.FindStringSubmatch(m)
		if sub[3] == redacted || strings.HasPrefix(sub[3], "REDACTED") {
			return m
		}
		return sub[1] + sub[2] + redacted
	})
}

// redactURL keeps scheme, host and path (token path segments replaced), and marks removed user info
// and query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return redacted
	}
	out := iso.RedactURL(raw)
	if u.User != nil {
		out = strings.Replace(out, "://", "://"+redacted+"@", 1)
	}
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + redacted
	}
	return out
}

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
