// Package redact removes secrets from text before it is written anywhere a user or a scraper can read
// it: conditions, events, logs and metric labels. It is the one place that knows what a secret looks
// like in this operator's messages: URL user info (vCenter server values, proxy URLs), URL query tokens
// (the assisted image service's api_key JWT, pre-signed S3/GCS/Azure signatures), token path segments
// (/byapikey/<jwt>/), password=/token: pairs, bearer tokens, JWTs, and any secret value the caller
// names explicitly (a Secret's password, for example).
//
// Redaction is by shape: it keeps enough of a message to be useful (scheme, host, path, user name,
// parameter names) and replaces only the secret part by Mask.
package redact

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Mask replaces every secret the structural rules find.
const Mask = "REDACTED"

var (
	// userinfoRe finds "scheme://userinfo@": greedy up to the last '@' of the authority, as url.Parse
	// splits it, so a password holding an unescaped '@' is covered too.
	userinfoRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#\s"'<>]*)@`)

	// tokenSegmentRe finds the assisted image service's token path segments: /byapikey/<jwt>/...,
	// /bytoken/<token>/...
	tokenSegmentRe = regexp.MustCompile(`(?i)(/(?:byapikey|bytoken)/)([^/?#\s"'<>]+)`)

	// sensitiveName is a parameter or key name that carries a secret: api_key, token, X-Amz-Signature,
	// X-Amz-Credential, X-Amz-Security-Token, sig (Azure SAS), password, client_secret, ...
	sensitiveName = `[A-Za-z0-9_.\-]*(?i:token|secret|passw|pwd|signature|credential|api[_\-]?key|access[_\-]?key|` +
		`private[_\-]?key|auth|sig)[A-Za-z0-9_.\-]*`

	// pairRe finds name=value pairs (URL queries, form bodies, free text) whose name is sensitive.
	pairRe = regexp.MustCompile(`(^|[?&;\s,(\[{"']|\b)(` + sensitiveName + `)(=)("[^"]*"|'[^']*'|[^&#\s"'<>]*)`)

	// colonRe finds "name: value" and "\"name\": \"value\"" (YAML, JSON, log text) for names that are
	// secrets on their own. Broader names (auth, sig) are only taken with '=' above: "auth: failed" is
	// prose.
	colonRe = regexp.MustCompile(`(?i)(["']?\b(?:password|passwd|pwd|secret|client[_\-]?secret|token|access[_\-]?token|` +
		`refresh[_\-]?token|id[_\-]?token|api[_\-]?key|private[_\-]?key)["']?[ \t]*:[ \t]*)("[^"]*"|'[^']*'|[^\s,;"'<>}\]]+)`)

	// bearerRe finds HTTP authorization credentials: "Bearer <token>", "Basic <base64>".
	bearerRe = regexp.MustCompile(`(\b(?i:bearer)\s+)([A-Za-z0-9\-._~+/]+=*)|(\bBasic\s+)([A-Za-z0-9+/]{6,}={0,2})`)

	// jwtRe finds JSON Web Tokens anywhere (their header always starts with eyJ, base64 of `{"`).
	jwtRe = regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`)
)

// String returns s with every secret removed: URL user info passwords, sensitive URL query values and
// token path segments, password=/token: style pairs, bearer and basic credentials, JWTs, and every
// non-empty string of secrets (raw, and in its URL-escaped forms). No secret of secrets occurs in the
// result.
func String(s string, secrets ...string) string {
	given := expand(secrets)
	s = replaceSecrets(s, given, safeMask(given))
	s = userinfoRe.ReplaceAllStringFunc(s, redactUserinfo)
	s = tokenSegmentRe.ReplaceAllString(s, "${1}"+Mask)
	s = pairRe.ReplaceAllString(s, "${1}${2}${3}"+Mask)
	s = colonRe.ReplaceAllString(s, "${1}"+Mask)
	s = bearerRe.ReplaceAllStringFunc(s, redactCredential)
	s = jwtRe.ReplaceAllString(s, Mask)
	// The masks written above may, next to the text around them, spell a given secret by chance (a
	// secret "Dx" after "password=REDACTED" + "x..."); a last pass with a mask that shares no character
	// with any secret settles it.
	return replaceSecrets(s, given, safeMask(given))
}

// Error is String of err's message; "" for a nil error.
func Error(err error, secrets ...string) string {
	if err == nil {
		return ""
	}
	return String(err.Error(), secrets...)
}

// URL returns a URL with its user info password, sensitive query values and token path segments
// masked (user name, host, path and other parameters kept), like String for a text that is one URL.
func URL(rawURL string, secrets ...string) string { return String(rawURL, secrets...) }

// HostOf returns only the host[:port] of a URL or bare host value, never its user info, path or query;
// "" when none can be told. For labels and messages that name an endpoint.
func HostOf(raw string) string {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || strings.ContainsAny(u.Host, "@ \t\r\n") {
		return ""
	}
	return u.Host
}

func redactUserinfo(m string) string {
	sub := userinfoRe.FindStringSubmatch(m)
	scheme, info := sub[1], sub[2]
	if user, _, ok := strings.Cut(info, ":"); ok {
		return scheme + user + ":" + Mask + "@"
	}
	// User info without a colon is a token as often as a user name (https://<token>@host).
	return scheme + Mask + "@"
}

func redactCredential(m string) string {
	sub := bearerRe.FindStringSubmatch(m)
	if sub[1] != "" {
		return sub[1] + Mask
	}
	return sub[3] + Mask
}

// expand lists the non-empty secrets with their URL-escaped forms, longest first (a longer secret is
// replaced before a shorter one that is part of it).
func expand(secrets []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range secrets {
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		add(strings.TrimPrefix(url.UserPassword("", s).String(), ":"))
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// maskCandidates are tried in order; the first that shares no character with any secret is used.
var maskCandidates = []string{Mask, "[redacted]", "***", "###", "~~~", "^^^", "|||", "!!!"}

// safeMask returns a mask sharing no character with any secret ("" when every candidate does). With
// such a mask no secret can span a mask and the text around it.
func safeMask(secrets []string) string {
	for _, m := range maskCandidates {
		ok := true
		for _, s := range secrets {
			if strings.ContainsAny(s, m) {
				ok = false
				break
			}
		}
		if ok {
			return m
		}
	}
	return ""
}

// replaceSecrets masks every byte range of s covered by an occurrence of a secret (overlapping
// occurrences included) with mask, one mask per maximal range. With a mask that shares no character
// with the secrets the result holds none of them; with the empty mask, joining the remaining pieces
// may spell a secret again, so it repeats until none is left (each round shortens s).
func replaceSecrets(s string, secrets []string, mask string) string {
	for len(secrets) > 0 {
		covered := make([]bool, len(s))
		found := false
		for _, secret := range secrets {
			for i := 0; ; {
				j := strings.Index(s[i:], secret)
				if j < 0 {
					break
				}
				for k := i + j; k < i+j+len(secret); k++ {
					covered[k] = true
				}
				found = true
				i += j + 1
			}
		}
		if !found {
			return s
		}
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if !covered[i] {
				b.WriteByte(s[i])
				continue
			}
			if i == 0 || !covered[i-1] {
				b.WriteString(mask)
			}
		}
		s = b.String()
		if mask != "" {
			return s
		}
	}
	return s
}
