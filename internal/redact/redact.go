// Package redact is the operator's one redaction engine: every text written where a user or a scraper
// can read it (conditions, Events, logs, status fields, metric labels, must-gather archives) goes
// through String, and the forms table below is the one list of what a secret looks like: PEM private
// keys, URL user info (vCenter server values, proxy URLs), URL queries and fragments (the assisted image
// service's api_key JWT, pre-signed S3/GCS/Azure signatures: parameter names do not tell which value is
// a secret, so the whole query goes), token path segments (/byapikey/<jwt>/), password=/client_secret=/
// token: pairs, Bearer and Basic authorization credentials, JWTs, and any secret value the caller names
// explicitly (a Secret's password, for example).
//
// Redaction is by shape: it keeps enough of a message to be useful (scheme, host, path, pair names)
// and replaces only the secret part by Mask.
package redact

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Mask replaces every secret the forms find.
const Mask = "REDACTED"

// form is one shape of secret: re finds it; tmpl (a regexp template) or fn rewrites a match.
type form struct {
	name string
	re   *regexp.Regexp
	tmpl string
	fn   func(match string) string
}

// sensitiveName is a pair name that carries a secret: api_key, token, client_secret, password,
// X-Amz-Signature, sig (Azure SAS), ...
const sensitiveName = `[A-Za-z0-9_.\-]*(?i:token|secret|passw|pwd|signature|credential|api[_\-]?key|access[_\-]?key|` +
	`private[_\-]?key|auth|sig)[A-Za-z0-9_.\-]*`

var (
	// credentialRe finds HTTP authorization credentials: "Bearer <token>", "Basic <base64>".
	credentialRe = regexp.MustCompile(`(\b(?i:bearer)\s+)([A-Za-z0-9\-._~+/]+=*)|(\b(?i:basic)\s+)([A-Za-z0-9+/]{6,}={0,2})`)
	// jwtSegment is a path segment shaped like a JSON Web Token (three base64url parts).
	jwtSegment = regexp.MustCompile(`^[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}$`)
)

// forms is the table of secret shapes, applied in order. Order matters only where shapes nest: private
// keys before anything that could cut one, URLs before pairs (a URL's query is masked whole).
var forms = []form{
	{name: "PEM private key",
		re:   regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*$)`),
		tmpl: "-----BEGIN ${1}PRIVATE KEY-----" + Mask + "-----END ${1}PRIVATE KEY-----"},
	{name: "URL user info, query, fragment and token path segments",
		re: regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>\x60]+`), fn: redactURLInText},
	{name: "token path segment outside a URL", // e.g. a logged request path
		re: regexp.MustCompile(`(?i)(/(?:byapikey|bytoken)/)([^/?#\s"'<>]+)`), tmpl: "${1}" + Mask},
	{name: "name=value pair with a secret's name",
		re:   regexp.MustCompile(`(^|[?&;\s,(\[{"']|\b)(` + sensitiveName + `)(=)("[^"]*"|'[^']*'|[^&#\s"'<>]*)`),
		tmpl: "${1}${2}${3}" + Mask},
	{name: "name: value pair with a secret's name", re: colonRe, fn: redactColonPair},
	{name: "Authorization Bearer/Basic credentials", re: credentialRe, fn: redactCredential},
	// Anywhere: a JWT's header always starts with eyJ, base64 of `{"`.
	{name: "JWT", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`), tmpl: Mask},
}

// colonRe finds "name: value" (YAML, JSON, log text) for names that are secrets on their own; broader
// names (auth, sig) are only taken with '=': "auth: failed" is prose.
var colonRe = regexp.MustCompile(`(?i)(["']?\b(?:password|passwd|pwd|secret|client[_\-]?secret|token|access[_\-]?token|` +
	`refresh[_\-]?token|id[_\-]?token|api[_\-]?key|private[_\-]?key)["']?[ \t]*:[ \t]*)("[^"]*"|'[^']*'|[^\s,;"'<>}\]]+)`)

// redactColonPair masks the value of a "name: value" match; a quoted value keeps its quotes, so JSON
// and YAML stay parsable.
func redactColonPair(m string) string {
	sub := colonRe.FindStringSubmatch(m)
	if v := sub[2]; len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
		return sub[1] + v[:1] + Mask + v[:1]
	}
	return sub[1] + Mask
}

// FormNames lists the table's forms in order (for tests and docs).
func FormNames() []string {
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = f.name
	}
	return out
}

// String returns s with every secret removed: every form of the table, and every non-empty string of
// secrets (raw, and in its URL-escaped forms). No secret of secrets occurs in the result.
func String(s string, secrets ...string) string {
	given := expand(secrets)
	s = replaceSecrets(s, given, safeMask(given))
	for _, f := range forms {
		if f.fn != nil {
			s = f.re.ReplaceAllStringFunc(s, f.fn)
		} else {
			s = f.re.ReplaceAllString(s, f.tmpl)
		}
	}
	// The masks written above may, next to the text around them, spell a given secret by chance (a
	// secret "Dx" after "password=REDACTED" + "x..."); a last pass with a mask that shares no character
	// with any secret settles it.
	return replaceSecrets(s, given, safeMask(given))
}

// redactURLInText rewrites one URL found in text: its user info, its whole query and fragment, and
// token path segments are masked; scheme, host and path stay.
// Punctuation that ends a sentence is not part of the URL.
func redactURLInText(match string) string {
	raw := strings.TrimRight(match, ".,;:)]}")
	tail := match[len(raw):]
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		// The whole user info: its user name is a token as often as a name (https://<token>@host,
		// https://<token>:x-oauth-basic@host).
		authority = Mask + authority[i:]
	}
	path, suffix := rest, ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		path, suffix = rest[:i], rest[i:i+1]+Mask
	}
	return scheme + "://" + authority + maskTokenSegments(path) + suffix + tail
}

// maskTokenSegments masks the path segments that carry a token: a JWT, or the segment after the
// assisted image service's byapikey/bytoken.
func maskTokenSegments(path string) string {
	segments := strings.Split(path, "/")
	for i := range segments {
		if isTokenSegment(segments, i) {
			segments[i] = Mask
		}
	}
	return strings.Join(segments, "/")
}

func isTokenSegment(segments []string, i int) bool {
	if jwtSegment.MatchString(segments[i]) {
		return true
	}
	return i > 0 && segments[i] != "" && (strings.EqualFold(segments[i-1], "byapikey") || strings.EqualFold(segments[i-1], "bytoken"))
}

// URLPath is the identity of a URL without any secret: scheme://host/path, without user info, query
// and fragment, token path segments masked; "<invalid URL>" when it has no host. Status fields store it
// (status.iso.url) and compare it to tell a renewed token from a new image.
func URLPath(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "<invalid URL>"
	}
	return u.Scheme + "://" + u.Host + maskTokenSegments(u.EscapedPath())
}

// SecretsOfURL lists the parts of rawURL that stay secrets wherever they show up again (an error text
// that quotes them without the URL around them): the user info password (or user-info token), the
// query and each query value of 8 characters or more, the fragment, and token path segments, raw and
// unescaped. Pass them to String.
func SecretsOfURL(rawURL string) []string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		} else {
			out = append(out, u.User.Username())
		}
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
		for _, values := range u.Query() {
			for _, v := range values {
				if len(v) >= 8 {
					out = append(out, v)
				}
			}
		}
	}
	out = append(out, u.Fragment)
	segments := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segments {
		if isTokenSegment(segments, i) {
			out = append(out, seg)
			if unescaped, err := url.PathUnescape(seg); err == nil {
				out = append(out, unescaped)
			}
		}
	}
	return out
}

// Error is String of err's message; "" for a nil error.
func Error(err error, secrets ...string) string {
	if err == nil {
		return ""
	}
	return String(err.Error(), secrets...)
}

// URL returns a URL with its user info, query, fragment and token path segments masked (scheme, host
// and path kept), like String for a text that is one URL.
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

func redactCredential(m string) string {
	sub := credentialRe.FindStringSubmatch(m)
	if sub[1] != "" {
		return sub[1] + Mask
	}
	return sub[3] + Mask
}

// expand lists the non-empty secrets with their URL-escaped forms, longest first (a longer secret is
// replaced before a shorter one that is part of it).
func expand(secrets []string) []string {
	seen := sets.New[string]()
	var out []string
	add := func(s string) {
		if s != "" && !seen.Has(s) {
			seen.Insert(s)
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
