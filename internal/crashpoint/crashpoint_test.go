package crashpoint

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestHitWithoutSeamIsANoOp(t *testing.T) {
	if err := Hit(context.Background(), VMCreated); err != nil {
		t.Fatalf("Hit without a seam: %v", err)
	}
}

func TestHitCallsTheSeamAndReportsACrash(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	ctx = With(ctx, func(_ context.Context, point string) {
		got = append(got, point)
		if point == AgentPatched {
			cancel() // the seam "kills" the operator here
		}
	})
	if err := Hit(ctx, VMCreated); err != nil {
		t.Fatalf("a seam that returns normally is no crash: %v", err)
	}
	if err := Hit(ctx, AgentPatched); err == nil {
		t.Fatal("a seam that ends the context must make Hit report the crash")
	}
	if strings.Join(got, ",") != VMCreated+","+AgentPatched {
		t.Fatalf("seam saw %v", got)
	}
}

func TestPointsAreUniqueAndNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All {
		if p == "" || seen[p] {
			t.Fatalf("crash point %q empty or listed twice", p)
		}
		seen[p] = true
	}
	if len(All) != 14 {
		t.Fatalf("%d crash points, want the 14 of issue 12", len(All))
	}
	campaign := map[string]bool{}
	for _, p := range Campaign {
		if p == "" || campaign[p] {
			t.Fatalf("campaign crash point %q empty or listed twice", p)
		}
		campaign[p] = true
	}
	for _, list := range [][]string{All, StaticIP, StaticIPRelease} {
		for _, p := range list {
			if !campaign[p] {
				t.Fatalf("crash point %q is not in Campaign: the chaos campaign would not enforce its kills", p)
			}
		}
	}
	if len(Campaign) != len(All)+len(StaticIP)+len(StaticIPRelease) {
		t.Fatalf("Campaign has %d points, want %d", len(Campaign), len(All)+len(StaticIP)+len(StaticIPRelease))
	}
}

// cmd/ never installs a seam itself: the only one the binary can have is cmd/app's, behind
// AGENT_FORGE_CRASHPOINT_SOCKET (tested there).
func TestShippedBinaryNeverSetsTheSeam(t *testing.T) {
	src, err := os.ReadFile("../../cmd/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "CrashPoint") || strings.Contains(string(src), "crashpoint") {
		t.Fatal("cmd/main.go must not set controllers.Options.CrashPoint")
	}
}
