package vsphere_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestValidateServer(t *testing.T) {
	const secret = "s3cr3t-Pw"
	for _, tc := range []struct {
		server string
		want   string // part of the error; "" means accepted
	}{
		{"vc.example.com", ""},
		{"vc.example.com:8443", ""},
		{"vc.example.com/sdk", ""},
		{"VC.Example.COM.", ""},
		{"10.0.0.5", ""},
		{"[fd00::5]:443", ""},
		{"https://vc.example.com", ""},
		{"https://vc.example.com/sdk", ""},
		{"HTTPS://vc_1.example.com:443/sdk", ""},
		{"", "empty"},
		{"   ", "empty"},
		{"https://admin:" + secret + "@vc.example.com/sdk", "user info"},
		{"https://admin@vc.example.com", "user info"},
		{"admin:" + secret + "@vc.example.com", "user info"},
		{"https://admin:p@" + secret + "@vc.example.com", "user info"},
		{"https://admin:" + secret + "@", "user info"},
		{"http://vc.example.com", "https"},
		{"ftp://vc.example.com", "host name or an https URL"},
		{"https://vc.example.com/sdk?token=" + secret, "query"},
		{"https://vc.example.com/sdk#" + secret, "fragment"},
		{"vc.example.com?" + secret, "query"},
		{"https://", "no host"},
		{"https:///sdk", "no host"},
		{"https://vc.example.com:99999", "port"},
		{"https://vc.example.com:0", "port"},
		{"https://vc.example.com:x" + secret, "not a valid"},
		{"vc example.com", "white space"},
		{"vc.example.com\n" + secret, "white space"},
		{"https://vc..example.com", "neither"},
		{"https://-vc.example.com", "neither"},
		{"https://vc.exa%41mple.com", "not a valid"},
		{"https://" + secret + "%zz@vc", "user info"},
	} {
		t.Run(tc.server, func(t *testing.T) {
			err := vsphere.ValidateServer(tc.server)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "admin") ||
				(tc.server != "" && strings.Contains(err.Error(), tc.server)) {
				t.Errorf("error %q quotes the value", err)
			}
		})
	}
}

// TestServerWithUserInfoIsRefusedBeforeAnyConnection: the session cache refuses such a value as invalid
// configuration, naming neither the user nor the password.
func TestServerWithUserInfoIsRefusedBeforeAnyConnection(t *testing.T) {
	sessions := vsphere.NewSessions(vsphere.SessionOptions{})
	defer sessions.Close(context.Background())
	_, err := sessions.Get(testContext(t), vsphere.Credentials{Server: "https://root:" + hungPassword + "@192.0.2.1/sdk", Username: "u", Password: "p"})
	wantClass(t, err, vsphere.ClassInvalid)
	if strings.Contains(err.Error(), hungPassword) || strings.Contains(err.Error(), "root") {
		t.Fatalf("error quotes the server value: %v", err)
	}
}

// TestExtraCAFile: a vCenter whose CA is neither a system root nor in the Secret is trusted through the
// extra CA file; an absent file means the system roots only; the file is re-read when it changes.
func TestExtraCAFile(t *testing.T) {
	env := startSim(t)
	creds := env.Credentials
	ca := creds.CABundle
	creds.CABundle = nil
	file := filepath.Join(t.TempDir(), "ca.pem")
	ctx := testContext(t)
	sessions := vsphere.NewSessions(vsphere.SessionOptions{ExtraCAFile: file})
	t.Cleanup(func() { sessions.Close(context.Background()) })

	_, err := sessions.Get(ctx, creds)
	wantClass(t, err, vsphere.ClassInvalid) // absent file: system roots only, which do not know the simulator

	if err := os.WriteFile(file, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = sessions.Get(ctx, creds)
	wantClass(t, err, vsphere.ClassInvalid)
	if !strings.Contains(err.Error(), "extra CA file") {
		t.Fatalf("error does not name the extra CA file: %v", err)
	}

	if err := os.WriteFile(file, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	// The modification time may not have moved on a coarse file system clock: the size has.
	if _, err := sessions.Get(ctx, creds); err != nil {
		t.Fatalf("login trusting the extra CA file: %v", err)
	}

	// The Secret's bundle still adds to it.
	other := vsphere.NewSessions(vsphere.SessionOptions{ExtraCAFile: filepath.Join(t.TempDir(), "absent.pem"), LoginTimeout: 30 * time.Second})
	t.Cleanup(func() { other.Close(context.Background()) })
	if _, err := other.Get(ctx, env.Credentials); err != nil {
		t.Fatalf("login with the Secret's CA bundle and no extra file: %v", err)
	}
}
