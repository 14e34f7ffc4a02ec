// Command agent-forge-collect gathers the agent-forge-operator's support data into a must-gather
// directory, redacted: the pools, VsphereAgents and their events, the NodePools the pools serve, the
// AgentMachines, Agents and InfraEnvs (metadata, status and a spec without its secret-bearing fields),
// the operator namespace (Deployments, Pods, Services, Leases, ConfigMap and Secret names and keys, never
// Secret data), the manager's logs and metrics. must-gather/gather runs it in the must-gather image;
// with --redact-only it scrubs a directory gathered by other tools (oc adm inspect) the same way.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "agent-forge-collect:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agent-forge-collect", flag.ContinueOnError)
	dir := fs.String("dir", "", "Output directory (created).")
	opNS := fs.String("operator-namespace", envOr("OPERATOR_NAMESPACE", "agent-forge-operator"), "Namespace the operator runs in.")
	callTimeout := fs.Duration("call-timeout", 30*time.Second, "Deadline of every API call.")
	total := fs.Duration("timeout", 10*time.Minute, "Deadline of the whole collection.")
	logLimit := fs.Int64("log-limit-bytes", 20<<20, "Most bytes of one container log.")
	redactOnly := fs.Bool("redact-only", false, "Only redact the files under --dir in place (URL tokens and credentials, Secret data).")
	kubeconfig := fs.String("kubeconfig", "", "Kubeconfig (default: KUBECONFIG or the in-cluster service account).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("--dir is required")
	}
	if *redactOnly {
		n, err := redactTree(*dir)
		if err != nil {
			return err
		}
		fmt.Printf("redacted %d file(s) under %s\n", n, *dir)
		return nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.Timeout = *callTimeout
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *total)
	defer cancel()
	c := &collector{dyn: dyn, kube: kube, out: *dir, operatorNamespace: *opNS, callTimeout: *callTimeout, logLimit: *logLimit}
	if err := c.collect(ctx); err != nil {
		return err
	}
	n, err := redactTree(*dir)
	if err != nil {
		return err
	}
	fmt.Printf("collected %d object(s) into %s (%d problem(s), see errors.txt); redacted %d file(s)\n", c.objects, *dir, len(c.problems), n)
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
