package controllers_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/pool"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/liveness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// hungServer is a vCenter that accepts TCP connections on loopback and never answers (not even the TLS
// handshake): a hung appliance, a black-holing load balancer.
type hungServer struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
}

// startHungServer listens on 127.0.0.1:0 and holds every connection until the spec ends.
func startHungServer() *hungServer {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	h := &hungServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed at cleanup
			}
			h.accepted.Add(1)
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		_ = ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			_ = c.Close()
		}
	})
	return h
}

func (h *hungServer) url() string { return "https://" + h.ln.Addr().String() + "/sdk" }

// createHungPool creates a scenario whose pool's credentials point at the hung server (user is its own
// vCenter user: each hung pool logs in on its own, none shares another's login).
func createHungPool(ctx context.Context, h *hungServer, user string) *afv1.VsphereAgentPool {
	GinkgoHelper()
	s := newScenario()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: "hung-vcenter"}, StringData: map[string]string{
		"server": h.url(), "username": user, "password": "hung-pa55word",
		"caBundle": string(vc.Credentials.CABundle),
	}}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	p := newPool(s, "hung")
	p.Spec.VSphere.CredentialsSecretRef.Name = secret.Name
	p = createPool(p)
	DeferCleanup(deletePoolAndWait, p)
	return p
}

// vSphereReachable is the pool's VSphereReachable condition as written (nil before the first write).
func vSphereReachable(p *afv1.VsphereAgentPool) *metav1.Condition {
	return meta.FindStatusCondition(getPool(p).Status.Conditions, afv1.ConditionVSphereReachable)
}

var _ = Describe("A hung vCenter", func() {
	// passTimeout is the pools' pass deadline here: shorter than the session's TLS handshake timeout
	// (10 s), so the pass deadline, not the transport, is what cuts a hung pass.
	const passTimeout = 5 * time.Second

	It("4 pools on a vCenter that never answers hold no worker for good: a healthy pool gets its VMs and status within 30 s, each hung pool reports VCenterTimeout within its deadline, liveness stays healthy and fails only for a pass stuck beyond its deadline", func(ctx context.Context) {
		// The watchdog runs on the real clock, as the manager's: pass deadlines are real time.
		tracker := liveness.NewTracker(clock.RealClock{}, liveness.DefaultGraceFactor)
		var stuckPool atomic.Pointer[types.NamespacedName]
		entered, release := make(chan struct{}), make(chan struct{})
		var enterOnce, releaseOnce sync.Once
		op := startOperator(operatorOptions{poolPassTimeout: passTimeout, liveness: tracker,
			crashPoint: func(_ context.Context, point string, key types.NamespacedName) {
				// A pass stuck where no deadline reaches (after its status write, on nothing): only
				// liveness can free its worker.
				if k := stuckPool.Load(); point == crashpoint.PoolStatusWritten && k != nil && *k == key {
					enterOnce.Do(func() { close(entered) })
					<-release
				}
			}})
		DeferCleanup(op.stop)

		// Liveness is watched for the whole run, not sampled at the end.
		var livenessErrs []string
		var livenessMu sync.Mutex
		watch, stopWatch := context.WithCancel(context.Background())
		watchDone := make(chan struct{})
		go func() {
			defer close(watchDone)
			for {
				if err := tracker.Check(nil); err != nil {
					livenessMu.Lock()
					livenessErrs = append(livenessErrs, err.Error())
					livenessMu.Unlock()
				}
				select {
				case <-watch.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		stopWatching := func() []string {
			stopWatch()
			<-watchDone
			livenessMu.Lock()
			defer livenessMu.Unlock()
			return livenessErrs
		}
		DeferCleanup(stopWatching)

		By("4 pools (as many as pool workers) on a vCenter that accepts connections and never answers")
		hung := startHungServer()
		var hungPools []*afv1.VsphereAgentPool
		created := map[string]time.Time{}
		for i := range 4 {
			p := createHungPool(ctx, hung, fmt.Sprintf("hung-user-%d", i))
			created[p.Namespace] = time.Now()
			hungPools = append(hungPools, p)
		}
		Eventually(func(g Gomega) {
			g.Expect(hung.accepted.Load()).To(BeNumerically(">=", 4), "every hung pool connected to the hung vCenter")
			g.Expect(tracker.Running()).To(BeNumerically(">=", 4), "every pool worker is in a hung pass")
		}, passTimeout, 50*time.Millisecond).Should(Succeed())

		By("a healthy pool on a working vCenter, while every pool worker is in a hung pass")
		healthyStart := time.Now()
		s := newScenario()
		d := startWorld(s, world.Options{})
		healthy := createPool(newPool(s, "workers"))
		DeferCleanup(deletePoolAndWait, healthy)
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())

		By("each hung pool reports VCenterTimeout within its deadline, with a Warning Event")
		seen := map[string]time.Duration{}
		Eventually(func(g Gomega) {
			for _, p := range hungPools {
				if _, ok := seen[p.Namespace]; ok {
					continue
				}
				if c := vSphereReachable(p); c != nil && c.Status == metav1.ConditionFalse && c.Reason == afv1.ReasonVCenterTimeout {
					seen[p.Namespace] = time.Since(created[p.Namespace]).Round(10 * time.Millisecond)
					g.Expect(c.Message).To(ContainSubstring("pool pass timeout"))
				}
			}
			g.Expect(seen).To(HaveLen(len(hungPools)))
		}, 2*passTimeout, 50*time.Millisecond).Should(Succeed(), "the first pass is cut at %s; its status is written right after", passTimeout)
		for _, p := range hungPools {
			Expect(seen[p.Namespace]).To(BeNumerically("<", 2*passTimeout), "reported before the watchdog would call the pass stuck")
			Eventually(func() int32 { return eventCount(ctx, p, afv1.ReasonVCenterTimeout) }, 10*time.Second, 200*time.Millisecond).Should(BeNumerically(">=", 1))
			Expect(vsphereAgents(p)).To(BeEmpty())
		}
		GinkgoWriter.Printf("hung pools: VCenterTimeout written after %v (pass timeout %s)\n", seen, passTimeout)
		AddReportEntry("hung pools: VCenterTimeout written after", fmt.Sprint(seen))

		By("the healthy pool's VMs are created and its status written within 30 s")
		Eventually(func(g Gomega) {
			g.Expect(poolVMs(healthy)).To(HaveLen(2))
			st := getPool(healthy).Status
			g.Expect(st.VMs).To(BeEquivalentTo(2))
			g.Expect(meta.FindStatusCondition(st.Conditions, afv1.ConditionVSphereReachable)).To(
				HaveField("Status", metav1.ConditionTrue))
		}, time.Until(healthyStart.Add(30*time.Second)), 200*time.Millisecond).Should(Succeed(), "30 s after the healthy pool was created")
		healthyTook := time.Since(healthyStart)
		GinkgoWriter.Printf("healthy pool: 2 VMs and their status after %s beside 4 hung pools\n", healthyTook.Round(100*time.Millisecond))
		AddReportEntry("healthy pool served beside 4 hung pools after", healthyTook.Round(100*time.Millisecond).String())

		By("the hung pools kept running passes all along (the healthy pool was not served by idle hung pools)")
		Expect(hung.accepted.Load()).To(BeNumerically(">=", 4))
		for _, p := range hungPools {
			Expect(vSphereReachable(p)).To(HaveField("Status", metav1.ConditionFalse))
		}

		By("liveness stayed healthy: every pass, hung or not, ended within its deadline")
		Expect(stopWatching()).To(BeEmpty())
		Expect(tracker.Check(nil)).To(Succeed())

		By("a pass stuck beyond twice its deadline fails liveness, naming the pool; healthy again once it ends")
		healthyKey := client.ObjectKeyFromObject(healthy)
		stuckPool.Store(&healthyKey)
		// Runs before the pool's deletion (cleanups run last-in first-out) even when an assertion fails.
		DeferCleanup(func() { releaseOnce.Do(func() { close(release) }) })
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed()) // a status change: the next pass writes it
		Eventually(entered, 60*time.Second).Should(BeClosed())
		blockedAt := time.Now()
		Expect(tracker.Check(nil)).To(Succeed(), "a pass within its deadline is not stuck")
		var stuckErr error
		Eventually(func() error { stuckErr = tracker.Check(nil); return stuckErr }, 4*passTimeout, 100*time.Millisecond).Should(HaveOccurred())
		// The pass started at most its deadline (its work) before it blocked after its status write.
		Expect(time.Since(blockedAt)).To(BeNumerically(">=", passTimeout), "not before twice the deadline")
		Expect(stuckErr.Error()).To(ContainSubstring(pool.ControllerName + " " + healthyKey.String()))
		Expect(stuckErr.Error()).To(ContainSubstring(fmt.Sprintf("limit %s", 2*passTimeout)))
		Expect(strings.Count(stuckErr.Error(), "running for")).To(Equal(1), "only the stuck pass is named: %v", stuckErr)
		releaseOnce.Do(func() { close(release) })
		Eventually(func() error { return tracker.Check(nil) }, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	})
})
