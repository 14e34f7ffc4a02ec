package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// TestReleaseImagesByDigest builds the four images for every platform into go-containerregistry's registry
// on loopback, release-renders bundle and catalog (make bundle/catalog DIGESTS=required, in a scratch copy of
// the repository) with the lock the pushes wrote, and checks from the registry what a cluster would pull.
//
// The bases are small synthetic images standing in for distroless/static, origin-must-gather and opm (no
// registry on the internet is reachable here); a real release (make release) pulls the bases the Dockerfiles
// name. The cost is cross-compiling the manager and the collector for two architectures (Go's build cache
// keeps it short after the first run) and one release render.
func TestReleaseImagesByDigest(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// Cold, the cross-compiles dominate: 9 min 18 s measured once on a loaded 2-core machine, but over 15 min
	// twice inside make test beside the controllers shards (2026-12-06: the builds, then the push, ran out of
	// a 15 min deadline). The bounds leave room for that and stay inside make test's 35 min -timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)))) // 127.0.0.1, random port
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ropts := []remote.Option{remote.WithContext(ctx)}

	bases := map[string]string{
		"manager":     pushBase(t, host+"/distroless/static:nonroot", types.OCIManifestSchema1, "/etc/os-release", nil, ropts),
		"must-gather": pushBase(t, host+"/openshift/origin-must-gather:4.16", types.DockerManifestSchema2, "/usr/bin/oc", []string{"/bin/sh"}, ropts),
		"catalog":     pushBase(t, host+"/operator-framework/opm:v1.69.0", types.DockerManifestSchema2, "/bin/opm", nil, ropts),
	}

	scratch := t.TempDir()
	run(t, root, "bash", "-c", `tar -C "$1" --exclude=./bin --exclude=./.git -cf - . | tar -C "$2" -xf -`, "-", root, scratch)
	lock := filepath.Join(scratch, "release.lock")
	tagBase := host + "/containeroo/agent-forge-operator"
	refs := map[string]string{
		"manager":     tagBase + ":v0.2.0",
		"must-gather": tagBase + "-must-gather:v0.2.0",
		"bundle":      tagBase + "-bundle:v0.2.0",
		"catalog":     tagBase + "-catalog:v0.2.0",
	}
	work := t.TempDir()
	push := func(images ...string) {
		t.Helper()
		o := options{context: scratch, push: true, lock: lock, work: work, timeout: 25 * time.Minute,
			keychain: authn.DefaultKeychain, log: testWriter{t}}
		for _, img := range images {
			mustSet(t, &o.images, img+"="+refs[img])
			if b := bases[img]; b != "" {
				mustSet(t, &o.bases, img+"="+b)
			}
		}
		mustSet(t, &o.buildArgs, "VERSION=0.2.0")
		if _, err := buildAll(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The release order: images, bundle render by digest, bundle image, catalog render, catalog image.
	makeArgs := []string{"-C", scratch, "--no-print-directory", "LOCALBIN=" + filepath.Join(root, "bin"),
		"IMAGE_TAG_BASE=" + tagBase, "VERSION=0.2.0", "IMAGE_DIGESTS_LOCK=" + lock, "DIGESTS=required"}
	push("manager", "must-gather")
	run(t, scratch, "make", append(makeArgs, "bundle")...)
	push("bundle")
	run(t, scratch, "make", append(makeArgs, "catalog")...)
	push("catalog")

	digest := map[string]string{} // image -> repository@digest, as the registry holds it
	for img, ref := range refs {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(r, ropts...)
		if err != nil {
			t.Fatal(err)
		}
		digest[img] = r.Context().Name() + "@" + d.Digest.String()
		checkIndex(t, img, r, ropts)
	}
	checkLock(t, lock, refs, digest)

	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	manager := pulled(t, refs["manager"], ropts)
	for arch, img := range manager {
		cf := config(t, img)
		if cf.Config.User != "65532:65532" || !reflect.DeepEqual(cf.Config.Entrypoint, managerCommand(t)) {
			t.Errorf("manager %s: user %q entrypoint %v", arch, cf.Config.User, cf.Config.Entrypoint)
		}
		checkLabels(t, "manager "+arch, cf, map[string]string{"name": "containeroo/agent-forge-operator",
			"vendor": "containeroo", "version": "0.2.0", "release": "1", "org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.version": "0.2.0", "org.opencontainers.image.title": "agent-forge-operator"},
			filepath.Join(root, "Dockerfile"))
		fs := files(t, img)
		checkFile(t, "manager "+arch, fs, "/licenses/LICENSE", 0o644, license)
		checkFile(t, "manager "+arch, fs, "/etc/os-release", 0o644, nil) // the base stays underneath
		checkELF(t, "manager "+arch, fs, "/manager", arch)
	}
	gather, err := os.ReadFile(filepath.Join(root, "must-gather", "gather"))
	if err != nil {
		t.Fatal(err)
	}
	for arch, img := range pulled(t, refs["must-gather"], ropts) {
		cf := config(t, img)
		// Docker semantics: the ENTRYPOINT drops the base's CMD.
		if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/usr/bin/gather"}) || cf.Config.Cmd != nil {
			t.Errorf("must-gather %s: entrypoint %v cmd %v", arch, cf.Config.Entrypoint, cf.Config.Cmd)
		}
		checkLabels(t, "must-gather "+arch, cf, map[string]string{"name": "containeroo/agent-forge-operator-must-gather",
			"vendor": "containeroo", "version": "0.2.0", "release": "1"}, filepath.Join(root, "must-gather", "Dockerfile"))
		fs := files(t, img)
		checkFile(t, "must-gather "+arch, fs, "/licenses/LICENSE", 0o644, license)
		checkFile(t, "must-gather "+arch, fs, "/usr/bin/gather", 0o755, gather)
		checkFile(t, "must-gather "+arch, fs, "/usr/bin/oc", 0o644, nil)
		checkELF(t, "must-gather "+arch, fs, "/usr/bin/agent-forge-collect", arch)
	}
	csv, err := os.ReadFile(filepath.Join(scratch, "bundle", "manifests", "agent-forge-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for arch, img := range pulled(t, refs["bundle"], ropts) {
		cf := config(t, img)
		checkLabels(t, "bundle "+arch, cf, map[string]string{"operators.operatorframework.io.bundle.package.v1": "agent-forge-operator"},
			filepath.Join(root, "bundle.Dockerfile"))
		fs := files(t, img)
		checkFile(t, "bundle "+arch, fs, "/manifests/agent-forge-operator.clusterserviceversion.yaml", 0o644, csv)
		checkFile(t, "bundle "+arch, fs, "/metadata/annotations.yaml", 0o644, nil)
		checkFile(t, "bundle "+arch, fs, "/tests/scorecard/config.yaml", 0o644, nil)
	}
	entry, err := os.ReadFile(filepath.Join(scratch, "catalog", "agent-forge-operator", "bundle-v0.2.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for arch, img := range pulled(t, refs["catalog"], ropts) {
		cf := config(t, img)
		if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/bin/opm"}) ||
			!reflect.DeepEqual(cf.Config.Cmd, []string{"serve", "/configs", "--cache-dir=/tmp/cache"}) {
			t.Errorf("catalog %s: entrypoint %v cmd %v", arch, cf.Config.Entrypoint, cf.Config.Cmd)
		}
		checkLabels(t, "catalog "+arch, cf, map[string]string{"operators.operatorframework.io.index.configs.v1": "/configs"},
			filepath.Join(root, "catalog.Dockerfile"))
		fs := files(t, img)
		checkFile(t, "catalog "+arch, fs, "/configs/agent-forge-operator/bundle-v0.2.0.yaml", 0o644, entry)
		checkFile(t, "catalog "+arch, fs, "/bin/opm", 0o644, nil)
	}
	checkRendered(t, csv, entry, digest)
}

// checkRendered: every image the release-rendered CSV and catalog entry name is the digest the registry holds.
func checkRendered(t *testing.T, csvYAML, entryYAML []byte, digest map[string]string) {
	t.Helper()
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Spec struct {
							Template struct {
								Spec struct {
									Containers []struct {
										Image string `json:"image"`
									} `json:"containers"`
								} `json:"spec"`
							} `json:"template"`
						} `json:"spec"`
					} `json:"deployments"`
				} `json:"spec"`
			} `json:"install"`
			RelatedImages []struct {
				Name  string `json:"name"`
				Image string `json:"image"`
			} `json:"relatedImages"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(csvYAML, &csv); err != nil {
		t.Fatal(err)
	}
	var entry struct {
		Image         string `json:"image"`
		RelatedImages []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"relatedImages"`
	}
	if err := yaml.Unmarshal(bytes.TrimPrefix(entryYAML, []byte("---\n")), &entry); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"CSV annotation containerImage": csv.Metadata.Annotations["containerImage"],
		"catalog entry image": entry.Image}
	want := map[string]string{"CSV annotation containerImage": digest["manager"], "catalog entry image": digest["bundle"]}
	for _, d := range csv.Spec.Install.Spec.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			got["CSV container"], want["CSV container"] = c.Image, digest["manager"]
		}
	}
	related := map[string]string{"agent-forge-operator": digest["manager"], "must-gather": digest["must-gather"]}
	for _, r := range csv.Spec.RelatedImages {
		got["CSV relatedImages "+r.Name], want["CSV relatedImages "+r.Name] = r.Image, related[r.Name]
	}
	for _, r := range entry.RelatedImages {
		if r.Name != "" {
			got["catalog relatedImages "+r.Name], want["catalog relatedImages "+r.Name] = r.Image, related[r.Name]
		}
	}
	if len(got) < 6 {
		t.Errorf("the render names too few images: %v", got)
	}
	for k, v := range got {
		if !strings.Contains(v, "@sha256:") || v != want[k] {
			t.Errorf("%s is %q, want %q (the registry's digest)", k, v, want[k])
		}
	}
}

// pushBase pushes a two-platform stand-in base with one file (per-arch content) and cmd.
func pushBase(t *testing.T, ref string, mt types.MediaType, file string, cmd []string, ropts []remote.Option) string {
	t.Helper()
	layerType, indexType, configType := types.OCILayer, types.OCIImageIndex, types.OCIConfigJSON
	if mt == types.DockerManifestSchema2 {
		layerType, indexType, configType = types.DockerLayer, types.DockerManifestList, types.DockerConfigJSON
	}
	idx := v1.ImageIndex(empty.Index)
	for _, p := range platforms {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		data := []byte("stand-in base for " + p.String() + "\n")
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(file, "/"), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(data)
		_ = tw.Close()
		raw := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
			tarball.WithMediaType(layerType))
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, mt), configType), l)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = p.OS, p.Architecture
		cf.Config.Cmd = cmd
		cf.Config.Labels = map[string]string{"base": ref}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		pl := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pl}})
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, mutate.IndexMediaType(idx, indexType), ropts...); err != nil {
		t.Fatal(err)
	}
	return ref
}

// checkIndex: the reference is an index of exactly the platforms the tool builds, one manifest each.
func checkIndex(t *testing.T, img string, r name.Reference, ropts []remote.Option) {
	t.Helper()
	idx, err := remote.Index(r, ropts...)
	if err != nil {
		t.Fatalf("%s: %v", img, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("%s: manifest %s has no platform", img, d.Digest)
		}
		got = append(got, d.Platform.String())
	}
	sort.Strings(got)
	if want := []string{"linux/amd64", "linux/arm64"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%s: index platforms %v, want %v", img, got, want)
	}
}

// checkLock: the lock the pushes wrote names each tag with the digest the registry holds.
func checkLock(t *testing.T, lock string, refs, digest map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	for img, ref := range refs {
		if want := digest[img][strings.Index(digest[img], "@")+1:]; got[ref] != want {
			t.Errorf("lock: %s is %q, the registry holds %s", ref, got[ref], want)
		}
	}
}

// pulled returns the index's images by architecture.
func pulled(t *testing.T, ref string, ropts []remote.Option) map[string]v1.Image {
	t.Helper()
	out := map[string]v1.Image{}
	for _, p := range platforms {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r, append(ropts, remote.WithPlatform(p))...)
		if err != nil {
			t.Fatal(err)
		}
		if cf := config(t, img); cf.Architecture != p.Architecture || cf.OS != p.OS {
			t.Errorf("%s for %s: config says %s/%s", ref, p, cf.OS, cf.Architecture)
		}
		out[p.Architecture] = img
	}
	return out
}

func config(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf
}

// checkLabels: the config carries the wanted labels, and every LABEL the Dockerfile declares, as declared.
func checkLabels(t *testing.T, where string, cf *v1.ConfigFile, want map[string]string, dockerfile string) {
	t.Helper()
	def, err := interpret(dockerfile, map[string]string{"VERSION": "0.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(def.labels) == 0 {
		t.Fatalf("%s: %s declares no label", where, dockerfile)
	}
	for k, v := range def.labels {
		if _, set := want[k]; !set {
			want[k] = v
		}
	}
	for k, v := range want {
		if got := cf.Config.Labels[k]; got != v {
			t.Errorf("%s: label %s is %q, want %q", where, k, got, v)
		}
	}
}

type file struct {
	mode int64
	data []byte
}

// files reads the image's flattened filesystem.
func files(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	out := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimPrefix(h.Name, "/")] = file{mode: h.Mode & 0o7777, data: data}
	}
}

// checkFile: path is a regular file with mode and (when want is given) that content.
func checkFile(t *testing.T, where string, fs map[string]file, path string, mode int64, want []byte) {
	t.Helper()
	f, ok := fs[path]
	switch {
	case !ok:
		t.Errorf("%s: %s missing", where, path)
	case f.mode != mode:
		t.Errorf("%s: %s mode %o, want %o", where, path, f.mode, mode)
	case want != nil && !bytes.Equal(f.data, want):
		t.Errorf("%s: %s differs from the repository's", where, path)
	}
}

// checkELF: path is an executable static binary for the architecture.
func checkELF(t *testing.T, where string, fs map[string]file, path, arch string) {
	t.Helper()
	f, ok := fs[path]
	if !ok {
		t.Errorf("%s: %s missing", where, path)
		return
	}
	if f.mode != 0o755 {
		t.Errorf("%s: %s mode %o, want 755", where, path, f.mode)
	}
	e, err := elf.NewFile(bytes.NewReader(f.data))
	if err != nil {
		t.Fatalf("%s: %s: %v", where, path, err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if e.Machine != want {
		t.Errorf("%s: %s is %s, want %s", where, path, e.Machine, want)
	}
	if interp := e.Section(".interp"); interp != nil {
		t.Errorf("%s: %s is dynamically linked (CGO_ENABLED=0 wanted)", where, path)
	}
}

func mustSet(t *testing.T, p *pairs, s string) {
	t.Helper()
	if err := p.Set(s); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir, cmd string, args ...string) {
	t.Helper()
	c := exec.Command(cmd, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cmd, strings.Join(args, " "), err, out)
	}
}

// testWriter sends the tool's progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
