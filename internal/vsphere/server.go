package vsphere

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/vmware/govmomi/vim25"
)

// ValidateServer checks a credentials Secret's server value: a bare host ("vc.example.com",
// "vc.example.com:8443", "10.0.0.5", "[fd00::5]:443", optionally followed by a path) or an https URL
// ("https://vc.example.com/sdk"). It refuses user info (a user name or password belongs in the Secret's
// username and password keys, never in a value that is printed), other schemes, queries, fragments and
// malformed values. Its messages never quote the value: a malformed value may hold a password.
func ValidateServer(server string) error {
	if strings.TrimSpace(server) == "" {
		return errors.New("the vCenter server is empty")
	}
	if strings.ContainsFunc(server, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("the vCenter server contains white space or control characters")
	}
	raw := server
	if i := strings.Index(server, "://"); i >= 0 {
		if scheme := server[:i]; !strings.EqualFold(scheme, "https") {
			if strings.EqualFold(scheme, "http") {
				return errors.New("the vCenter server must use https (or be a bare host name), not http")
			}
			return errors.New("the vCenter server must be a host name or an https URL")
		}
	} else {
		raw = "https://" + server
	}
	// User info is refused before parsing: url.Parse accepts it, and its errors quote the input.
	if authority := authorityOf(raw); strings.Contains(authority, "@") {
		return errors.New("the vCenter server must not carry user info (user name or password); " +
			"put them in the Secret's username and password keys")
	}
	u, err := url.Parse(raw)
	if err != nil || strings.Contains(authorityOf(raw), "%") {
		return errors.New("the vCenter server is not a valid host name or https URL")
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return errors.New("the vCenter server names no host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("the vCenter server must not carry a query or fragment")
	case u.Opaque != "":
		return errors.New("the vCenter server is not a valid host name or https URL")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("the vCenter server's port must be between 1 and 65535")
		}
	}
	if !validHost(u.Hostname()) {
		return errors.New("the vCenter server's host is neither a DNS name nor an IP address")
	}
	return nil
}

// authorityOf returns the authority part of an absolute URL string (between "://" and the next '/',
// '?' or '#'), without parsing it.
func authorityOf(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// validHost accepts an IP address or a DNS name of letters, digits, hyphens, underscores and dots.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			default:
				return false
			}
		}
	}
	return true
}

// serverURL turns a validated server value ("vc.example.com", "vc:8443", "https://vc/sdk") into the SDK URL.
func serverURL(server string) (*url.URL, error) {
	if err := ValidateServer(server); err != nil {
		return nil, &Error{Class: ClassInvalid, Op: "Login", Err: err}
	}
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, NewError(ClassInvalid, "Login", "the vCenter server is not a valid host name or https URL")
	}
	u.Scheme = "https"
	if u.Path == "" || u.Path == "/" {
		u.Path = vim25.Path
	}
	return u, nil
}

// vcenterKey names one vCenter endpoint for the circuit breaker and the metric label: the lower-case
// host with its port (443 when none), never user info or path.
func vcenterKey(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(host, port)
}
