package olm

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A mirrored (disconnected) cluster pulls through an ImageDigestMirrorSet, which only redirects pulls by
// digest: a CSV that says features.operators.openshift.io/disconnected "true" must name every image by
// @sha256:, and list each under relatedImages so oc-mirror copies it.

const disconnectedAnnotation = "features.operators.openshift.io/disconnected"

// digestRef matches an image reference pinned by digest.
var digestRef = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// fixtureDigest matches the digests bundle-release-check writes into its scratch lock (all zeros but the
// last digit): never a pushed image.
var fixtureDigest = regexp.MustCompile(`@sha256:0{63}[1-9]$`)

// csvImages lists every image a CSV references, keyed by where: its Deployments' containers and init
// containers, the containerImage annotation and relatedImages.
func csvImages(c *csv) map[string]string {
	out := map[string]string{}
	for _, d := range c.Spec.Install.Spec.Deployments {
		pod := d.Spec.Template.Spec
		for _, ctr := range append(pod.InitContainers, pod.Containers...) {
			out["deployment "+d.Name+" container "+ctr.Name] = ctr.Image
		}
	}
	if img, ok := c.Metadata.Annotations["containerImage"]; ok {
		out["annotation containerImage"] = img
	}
	for _, r := range c.Spec.RelatedImages {
		out["relatedImages "+r.Name] = r.Image
	}
	return out
}

// checkRelatedImages: every image a Deployment runs is a named related image (what oc-mirror copies), and
// the must-gather image is one too (oc adm must-gather on a disconnected hub pulls it from the mirror).
func checkRelatedImages(t *testing.T, where string, c *csv) {
	t.Helper()
	related := map[string]string{}
	for _, r := range c.Spec.RelatedImages {
		if r.Name == "" {
			t.Errorf("%s: related image %s has no name", where, r.Image)
		}
		if _, dup := related[r.Name]; dup {
			t.Errorf("%s: related image name %q used twice", where, r.Name)
		}
		related[r.Name] = r.Image
	}
	names := map[string]bool{}
	for _, img := range related {
		names[img] = true
	}
	if len(c.Spec.Install.Spec.Deployments) == 0 {
		t.Errorf("%s: no Deployment in the install strategy", where)
	}
	for _, d := range c.Spec.Install.Spec.Deployments {
		pod := d.Spec.Template.Spec
		for _, ctr := range append(pod.InitContainers, pod.Containers...) {
			if !names[ctr.Image] {
				t.Errorf("%s: Deployment %s runs %s, which relatedImages does not list", where, d.Name, ctr.Image)
			}
		}
	}
	if related["must-gather"] == "" {
		t.Errorf("%s: relatedImages lacks the must-gather image", where)
	}
}

// checkDisconnectedClaim: the annotation is "true" exactly when every image is a digest (make bundle sets it
// from the images it resolved), so it can never claim what a mirror cannot serve.
func checkDisconnectedClaim(t *testing.T, where string, c *csv) (allDigests bool) {
	t.Helper()
	var tagged []string
	for at, img := range csvImages(c) {
		if !digestRef.MatchString(img) {
			tagged = append(tagged, at+" "+img)
		}
	}
	allDigests = len(tagged) == 0
	switch got := c.Metadata.Annotations[disconnectedAnnotation]; {
	case got == "true" && !allDigests:
		t.Errorf("%s: %s is \"true\" but images are referenced by tag: %s", where, disconnectedAnnotation, strings.Join(tagged, "; "))
	case got != "true" && got != "false":
		t.Errorf("%s: %s is %q, want \"true\" or \"false\"", where, disconnectedAnnotation, got)
	case got == "false" && allDigests:
		t.Errorf("%s: every image is a digest but %s is \"false\" (make bundle sets it)", where, disconnectedAnnotation)
	}
	return allDigests
}

// TestCommittedRenderClaimsDisconnectedOnlyWithDigests checks bundle/ and every catalog entry as committed.
// Until a release pushed its images (config/manifests/image-digests.lock), they are the development render:
// tags, and disconnected "false".
func TestCommittedRenderClaimsDisconnectedOnlyWithDigests(t *testing.T) {
	b := loadCurrentBundle(t)
	checkRelatedImages(t, "bundle/", &b.csv)
	checkDisconnectedClaim(t, "bundle/", &b.csv)

	dir, err := repoPath("catalog", "agent-forge-operator")
	if err != nil {
		t.Fatal(err)
	}
	checkCatalogImages(t, dir, false)
}

// checkCatalogImages checks each olm.bundle entry of the catalog in dir; release requires digests throughout.
func checkCatalogImages(t *testing.T, dir string, release bool) {
	t.Helper()
	objs, err := loadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bundles int
	for _, o := range objs {
		if o.Schema != "olm.bundle" {
			continue
		}
		bundles++
		where := "catalog " + o.Name
		c, err := catalogBundleCSV(o)
		if err != nil {
			t.Fatal(err)
		}
		checkRelatedImages(t, where, c)
		allDigests := checkDisconnectedClaim(t, where, c)
		// The mirror serves the bundle image by digest too; a CSV that claims disconnected needs it.
		if (release || allDigests) && !digestRef.MatchString(o.Image) {
			t.Errorf("%s: bundle image %s is not pinned by digest", where, o.Image)
		}
		// oc-mirror copies what the catalog entry lists (opm render takes it from the CSV).
		listed := map[string]bool{}
		for _, r := range o.RelatedImages {
			listed[r.Image] = true
		}
		for _, r := range c.Spec.RelatedImages {
			if !listed[r.Image] {
				t.Errorf("%s: the entry's relatedImages lack the CSV's %q %s", where, r.Name, r.Image)
			}
		}
		for _, r := range o.RelatedImages {
			if release && !digestRef.MatchString(r.Image) {
				t.Errorf("%s: related image %q %s is not pinned by digest", where, r.Name, r.Image)
			}
		}
		if release && !allDigests {
			t.Errorf("%s: the release render references an image by tag", where)
		}
	}
	if bundles == 0 {
		t.Fatalf("%s: no olm.bundle entry", dir)
	}
}

// TestReleaseRenderPinsEveryImage runs the release render (make bundle-release-check: bundle and catalog with
// DIGESTS=required in a scratch copy, digests from a fixture lock) and checks the CSVs it wrote.
func TestReleaseRenderPinsEveryImage(t *testing.T) {
	root, err := repoPath()
	if err != nil {
		t.Fatal(err)
	}
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is needed for the release render: %v", err)
	}
	for _, pattern := range []string{"kustomize", "controller-gen", "operator-sdk-v*", "opm-v*"} {
		if m, _ := filepath.Glob(filepath.Join(root, "bin", pattern)); len(m) == 0 {
			t.Fatalf("bin/%s not built (make test builds it for bundle-verify; alone: make olm-tools bin/kustomize bin/controller-gen)", pattern)
		}
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), makeBin, "--no-print-directory", "bundle-release-check", "RELEASE_RENDER_DIR="+out)
	cmd.Dir = root
	// Variables of a make that runs this test (make test) must not leak into the release render.
	cmd.Env = withoutEnv(os.Environ(), "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "IMAGE_DIGESTS_LOCK", "DIGESTS")
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make bundle-release-check: %v\n%s", err, log)
	}

	rel, err := loadBundle(filepath.Join(out, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	dev := loadCurrentBundle(t)
	images := csvImages(&rel.csv)
	for at, img := range images {
		switch {
		case !digestRef.MatchString(img):
			t.Errorf("release render: %s is %s, not pinned by digest", at, img)
		case !fixtureDigest.MatchString(img):
			t.Errorf("release render: %s is %s, not a digest from the fixture lock", at, img)
		}
	}
	// Same repositories as the development render, only pinned: the digest replaced the tag, nothing else.
	devImages := csvImages(&dev.csv)
	for at, img := range devImages {
		repo, _, pinned := strings.Cut(img, "@")
		if !pinned {
			repo = img[:strings.LastIndex(img, ":")]
		}
		if got := images[at]; !strings.HasPrefix(got, repo+"@sha256:") {
			t.Errorf("release render: %s is %s, want %s pinned by digest", at, got, repo)
		}
	}
	if len(images) != len(devImages) {
		t.Errorf("release render references %d images, the development render %d", len(images), len(devImages))
	}
	checkRelatedImages(t, "release bundle", &rel.csv)
	if got := rel.csv.Metadata.Annotations[disconnectedAnnotation]; got != "true" {
		t.Errorf("release render: %s is %q, want \"true\"", disconnectedAnnotation, got)
	}
	checkCatalogImages(t, filepath.Join(out, "catalog", "agent-forge-operator"), true)
}

// TestImageResolutionFailsWithoutDigest runs hack/image-digests.sh with an empty lock and a PATH without any
// registry tool (skopeo, crane): a release render must fail with a message naming the image, while an image
// by digest, one the lock knows, and (development render) an unknown tag pass.
func TestImageResolutionFailsWithoutDigest(t *testing.T) {
	script, err := repoPath("hack", "image-digests.sh")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed for hack/image-digests.sh: %v", err)
	}
	// Only what the script needs besides bash builtins; no skopeo or crane, whatever the machine has.
	pathDir := t.TempDir()
	for _, tool := range []string{"dirname", "timeout", "sed", "awk", "head", "mktemp", "mv"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(pathDir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	lock := filepath.Join(t.TempDir(), "image-digests.lock")
	const digest = "sha256:" + "00000000000000000000000000000000000000000000000000000000000000aa"
	run := func(lockText string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		if err := os.WriteFile(lock, []byte(lockText), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), bash, append([]string{script, "resolve"}, args...)...)
		cmd.Env = append(withoutEnv(os.Environ(), "PATH", "IMAGE_DIGESTS_LOCK"), "PATH="+pathDir, "IMAGE_DIGESTS_LOCK="+lock)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			code = exit.ExitCode()
		default:
			t.Fatalf("running %s: %v", script, err)
		}
		return o.String(), e.String(), code
	}

	const tagged = "registry.example.com/team/operator:v9.9.9"
	stdout, stderr, code := run("# no release pushed yet\n", "--required", tagged)
	if code == 0 {
		t.Errorf("resolving %s with an empty lock and no registry tool succeeded: %q", tagged, stdout)
	}
	for _, want := range []string{"cannot resolve to a digest", tagged, lock, "skopeo, crane"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("failure message lacks %q:\n%s", want, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("a failed resolution printed references: %q", stdout)
	}

	byDigest := "registry.example.com/team/operator@" + digest
	if stdout, stderr, code = run("", "--required", byDigest); code != 0 || stdout != byDigest+"\n" {
		t.Errorf("an image by digest: exit %d, %q, %s; want it kept", code, stdout, stderr)
	}
	if stdout, stderr, code = run(tagged+" "+digest+"\n", "--required", tagged); code != 0 || stdout != byDigest+"\n" {
		t.Errorf("a tag the lock knows: exit %d, %q, %s; want %s", code, stdout, stderr, byDigest)
	}
	if stdout, stderr, code = run("", tagged); code != 0 || stdout != tagged+"\n" {
		t.Errorf("development render of an unknown tag: exit %d, %q, %s; want the tag kept", code, stdout, stderr)
	}
	if _, stderr, code = run(tagged+" sha256:nothex\n", tagged); code == 0 || !strings.Contains(stderr, "no valid digest") {
		t.Errorf("a malformed lock line: exit %d, %s; want a failure", code, stderr)
	}
}

// withoutEnv drops the named variables from env.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
