package iso

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// redactedSegment replaces token-like path segments.
const redactedSegment = "REDACTED"

// jwtLike matches a JSON Web Token (three base64url parts), the form of assisted-image-service tokens.
var jwtLike = regexp.MustCompile(`^[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}$`)

// tokenSegmentMarkers are path segments after which the assisted image service puts a token
// (e.g. /byapikey/<jwt>/4.16/x86_64/minimal.iso).
var tokenSegmentMarkers = map[string]bool{"byapikey": true, "bytoken": true}

// URLHash is the hex SHA-256 of the full URL: it detects a changed URL without storing its token.
func URLHash(rawURL string) string {
	sum := sha256.Sum256([]byte(rawURL))
	return hex.EncodeToString(sum[:])
}

// RedactURL returns scheme://host/path of rawURL without user info, query or fragment, and with
// token-like path segments replaced by REDACTED. An unparsable URL yields "<invalid URL>".
func RedactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "<invalid URL>"
	}
	segments := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segments {
		if isTokenSegment(segments, i) {
			segments[i] = redactedSegment
		} else {
			segments[i] = seg
		}
	}
	return u.Scheme + "://" + u.Host + strings.Join(segments, "/")
}

func isTokenSegment(segments []string, i int) bool {
	if jwtLike.MatchString(segments[i]) {
		return true
	}
	return i > 0 && tokenSegmentMarkers[strings.ToLower(segments[i-1])] && segments[i] != ""
}

// secretsOf lists substrings of rawURL that must never be printed: the URL itself, its user info,
// query, fragment, long query values and token path segments. Longest first, so replacing them in
// order never leaves a fragment of a longer secret behind.
func secretsOf(rawURL string) []string {
	secrets := []string{rawURL}
	u, err := url.Parse(rawURL)
	if err == nil {
		if u.User != nil {
			secrets = append(secrets, u.User.String())
			if p, ok := u.User.Password(); ok {
				secrets = append(secrets, p, url.QueryEscape(p))
			}
		}
		if u.RawQuery != "" {
			secrets = append(secrets, u.RawQuery)
			for _, values := range u.Query() {
				for _, v := range values {
					if len(v) >= 8 {
						secrets = append(secrets, v, url.QueryEscape(v))
					}
				}
			}
		}
		if u.Fragment != "" {
			secrets = append(secrets, u.Fragment)
		}
		segments := strings.Split(u.EscapedPath(), "/")
		for i, seg := range segments {
			if isTokenSegment(segments, i) {
				secrets = append(secrets, seg)
				if unescaped, err := url.PathUnescape(seg); err == nil {
					secrets = append(secrets, unescaped)
				}
			}
		}
	}
	out := secrets[:0]
	for _, s := range secrets {
		if s != "" {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redactor scrubs the secrets of one or more URLs out of strings.
type redactor struct {
	secrets []string
}

func newRedactor(rawURL string) *redactor {
	return &redactor{secrets: secretsOf(rawURL)}
}

// addURL learns the secrets of another URL (e.g. a redirect target).
func (r *redactor) addURL(rawURL string) {
	r.secrets = append(r.secrets, secretsOf(rawURL)...)
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

func (r *redactor) scrub(s string) string {
	for _, secret := range r.secrets {
		replacement := redactedSegment
		if strings.Contains(secret, "://") {
			replacement = RedactURL(secret)
		}
		s = strings.ReplaceAll(s, secret, replacement)
	}
	return s
}

// safeError carries a message already scrubbed of URL secrets. It unwraps to the cause so callers can
// still match context.DeadlineExceeded and friends, but its own text never contains the token.
type safeError struct {
	msg   string
	cause error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.cause }

// wrap returns an error whose message is prefix + ": " + err, scrubbed. A *url.Error from net/http is
// unwrapped first: its message embeds the full URL, token included.
func (r *redactor) wrap(prefix string, err error) error {
	if err == nil {
		return nil
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		r.addURL(ue.URL)
		cause = ue.Err
	}
	msg := cause.Error()
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	return &safeError{msg: r.scrub(msg), cause: cause}
}

// errorf builds a scrubbed error without a cause.
func (r *redactor) errorf(msg string) error {
	return &safeError{msg: r.scrub(msg)}
}
