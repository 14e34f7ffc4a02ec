package vsphere

import (
	"context"
	"net"
)

// SetDialer replaces the TCP dialer of the sessions built with o: tests map a name that is not
// loopback (so that the proxy environment applies to it) onto a loopback listener.
func SetDialer(o *SessionOptions, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	o.dial = dial
}
