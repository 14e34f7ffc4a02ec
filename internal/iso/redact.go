package iso

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"

	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// URLHash is the hex SHA-256 of the full URL: it detects a changed URL without storing its token.
func URLHash(rawURL string) string {
	sum := sha256.Sum256([]byte(rawURL))
	return hex.EncodeToString(sum[:])
}

// RedactURL is redact.URLPath: scheme://host/path of rawURL without user info, query or fragment, token
// path segments masked. What status.iso.url stores.
func RedactURL(rawURL string) string { return redact.URLPath(rawURL) }

// redactor scrubs the secrets of one or more URLs (the ISO URL, a redirect target) out of strings with
// the redaction engine: its forms, plus the URLs' own secrets wherever they appear without the URL.
type redactor struct {
	secrets []string
}

func newRedactor(rawURL string) *redactor {
	return &redactor{secrets: redact.SecretsOfURL(rawURL)}
}

// addURL learns the secrets of another URL (e.g. a redirect target).
func (r *redactor) addURL(rawURL string) {
	r.secrets = append(r.secrets, redact.SecretsOfURL(rawURL)...)
}

func (r *redactor) scrub(s string) string { return redact.String(s, r.secrets...) }

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
