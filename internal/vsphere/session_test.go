package vsphere_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/mo"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func TestSessionsAreCachedByCredentials(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	again, err := h.sessions.Get(ctx, h.env.Credentials)
	if err != nil || again != h.client {
		t.Fatalf("second Get returned another client (%v)", err)
	}
	_, calls := h.calls.snapshot()
	if calls["Login"] != 1 {
		t.Fatalf("logins = %d, want 1", calls["Login"])
	}

	// Rotated password of the same user: a new session (the old one is retired).
	rotated := h.env.Credentials
	rotated.Password = "rotated"
	_, err = h.sessions.Get(ctx, rotated)
	wantClass(t, err, vsphere.ClassAuth)
	if strings.Contains(err.Error(), "rotated") || strings.Contains(err.Error(), vcsim.Password) {
		t.Fatalf("error leaks the password: %v", err)
	}
}

func TestTLSVerification(t *testing.T) {
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx := testContext(t)
	sessions := vsphere.NewSessions(vsphere.SessionOptions{})
	defer sessions.Close(ctx)

	untrusted := env.Credentials
	untrusted.CABundle = nil
	_, err = sessions.Get(ctx, untrusted)
	wantClass(t, err, vsphere.ClassInvalid)

	pinned := untrusted
	pinned.Thumbprint = strings.ToLower(strings.ReplaceAll(env.Thumbprint, ":", ""))
	if _, err := sessions.Get(ctx, pinned); err != nil {
		t.Fatalf("thumbprint-pinned login: %v", err)
	}

	wrongPin := untrusted
	wrongPin.Thumbprint = strings.Repeat("AB", 32)
	_, err = sessions.Get(ctx, wrongPin)
	if err == nil {
		t.Fatal("a wrong thumbprint was accepted")
	}

	insecure := untrusted
	insecure.Insecure = true
	if _, err := sessions.Get(ctx, insecure); err != nil {
		t.Fatalf("insecure login: %v", err)
	}
}

func TestCloseLogsOut(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	admin, err := h.env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Logout(ctx) }()
	count := func() int {
		var sm mo.SessionManager
		if err := admin.RetrieveOne(ctx, *admin.ServiceContent.SessionManager, []string{"sessionList"}, &sm); err != nil {
			t.Fatal(err)
		}
		return len(sm.SessionList)
	}
	before := count()
	h.sessions.Close(context.Background())
	if after := count(); after != before-1 {
		t.Fatalf("sessions %d -> %d after Close, want one fewer", before, after)
	}
}

func TestExpiredSessionIsRenewedTransparently(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	h.createVM(t, "renewed", owner)

	// vCenter forgets our session mid-run (expiry, restart, admin terminated it).
	admin, err := h.env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Logout(ctx) }()
	var sm mo.SessionManager
	if err := admin.RetrieveOne(ctx, *admin.ServiceContent.SessionManager, []string{"sessionList", "currentSession"}, &sm); err != nil {
		t.Fatal(err)
	}
	var victims []string
	for _, s := range sm.SessionList {
		if s.Key != sm.CurrentSession.Key {
			victims = append(victims, s.Key)
		}
	}
	if err := admin.SessionManager.TerminateSession(ctx, victims); err != nil {
		t.Fatal(err)
	}

	if _, err := h.client.FindVM(ctx, vcsim.Datacenter, owner.OwnerUID, ""); err != nil {
		t.Fatalf("FindVM after session loss: %v", err)
	}
	if err := h.client.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner); err != nil {
		t.Fatalf("DestroyVM after session loss: %v", err)
	}
	_, calls := h.calls.snapshot()
	if calls["Login"] != 2 {
		t.Fatalf("logins = %d, want 2 (initial + one renewal)", calls["Login"])
	}
}

func TestKeepAliveAndUseAfterClose(t *testing.T) {
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx := testContext(t)
	calls := &callCounter{byMethod: map[string]int{}}
	sessions := vsphere.NewSessions(vsphere.SessionOptions{KeepAlive: 10 * time.Millisecond, WrapRoundTripper: calls.wrap})
	c, err := sessions.Get(ctx, env.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	// An idle session pings vCenter (bounded wait for the keep-alive goroutine).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, byMethod := calls.snapshot(); byMethod["CurrentTime"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no keep-alive call on an idle session")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sessions.Close(ctx)
	// A holder of the closed client gets an auth error instead of a new, untracked session.
	_, err = c.FindVM(ctx, vcsim.Datacenter, "x", "")
	wantClass(t, err, vsphere.ClassAuth)
}
