package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// platforms is the one list of what a release builds. The CSV's operatorframework.io/arch.* and os.* labels
// and the Deployment's node affinity are checked against it (arch_test.go).
var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// dockerfiles maps each image the tool builds to its Dockerfile, relative to the build context.
var dockerfiles = map[string]string{
	"manager":     "Dockerfile",
	"must-gather": "must-gather/Dockerfile",
	"bundle":      "bundle.Dockerfile",
	"catalog":     "catalog.Dockerfile",
}

// builder builds multi-arch indexes from the Dockerfiles of a build context without a container engine.
type builder struct {
	context   string            // the repository root (or a scratch copy of it)
	work      string            // cross-compiled binaries, one directory per stage and platform
	buildArgs map[string]string // --build-arg
	bases     map[string]string // image name -> base reference replacing the Dockerfile's FROM
	created   time.Time         // every timestamp (reproducible digests)
	remote    []remote.Option   // context with deadline, auth
	log       io.Writer
}

// entry is one file or directory of a layer.
type entry struct {
	path string // absolute, in the image
	mode int64
	dir  bool
	data []byte
}

// build returns the index of the named image for every platform.
func (b *builder) build(ctx context.Context, imageName string) (v1.ImageIndex, error) {
	file, ok := dockerfiles[imageName]
	if !ok {
		return nil, fmt.Errorf("unknown image %q (want one of manager, must-gather, bundle, catalog)", imageName)
	}
	def, err := interpret(filepath.Join(b.context, file), b.buildArgs)
	if err != nil {
		return nil, err
	}
	for _, why := range def.skipped {
		_, _ = fmt.Fprintf(b.log, "imagebuild: %s: skipped RUN %s\n", imageName, why)
	}
	base := def.base
	if o := b.bases[imageName]; o != "" {
		base = o
	}
	// Files from the build context are the same on every platform: one layer each, shared by digest.
	shared := map[int][]entry{}
	for i, op := range def.copies {
		if op.from == "" {
			es, err := b.contextEntries(op)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", file, op.line, err)
			}
			shared[i] = es
		}
	}
	idx := v1.ImageIndex(empty.Index)
	var indexType types.MediaType
	for _, p := range platforms {
		img, oci, err := b.baseImage(base, p)
		if err != nil {
			return nil, fmt.Errorf("%s: base %s for %s: %w", imageName, base, p, err)
		}
		layers := make([][]entry, len(def.copies))
		for i, op := range def.copies {
			if op.from == "" {
				layers[i] = shared[i]
				continue
			}
			es, err := b.binaryEntry(ctx, def.builds[op.from], op, p)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", file, op.line, err)
			}
			layers[i] = es
		}
		if err := applyChmods(def.chmods, layers); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		layerType := types.DockerLayer
		if oci {
			layerType = types.OCILayer
		}
		var adds []mutate.Addendum
		for i, es := range layers {
			l, err := b.layer(es, layerType)
			if err != nil {
				return nil, err
			}
			adds = append(adds, mutate.Addendum{Layer: l, MediaType: layerType,
				History: v1.History{CreatedBy: def.copies[i].text, Created: v1.Time{Time: b.created}}})
		}
		if img, err = mutate.Append(img, adds...); err != nil {
			return nil, err
		}
		if img, err = b.configure(img, def, p); err != nil {
			return nil, err
		}
		if indexType == "" {
			indexType = types.DockerManifestList
			if oci {
				indexType = types.OCIImageIndex
			}
		}
		pl := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pl}})
	}
	return mutate.IndexMediaType(idx, indexType), nil
}

// baseImage pulls the base for one platform (with the deadline in b.remote), or starts from scratch. oci says
// whether the base's manifest is OCI (our layers and the index then are too) or Docker schema 2.
func (b *builder) baseImage(ref string, p v1.Platform) (v1.Image, bool, error) {
	if ref == "scratch" {
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		return img, true, nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, false, err
	}
	img, err := remote.Image(r, append(b.remote, remote.WithPlatform(p))...)
	if err != nil {
		return nil, false, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, false, err
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		return nil, false, fmt.Errorf("the base is %s/%s, not %s", cf.OS, cf.Architecture, p)
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, false, err
	}
	return img, mt == types.OCIManifestSchema1, nil
}

// configure writes the Dockerfile's labels, user, workdir, entrypoint and cmd into the image config.
func (b *builder) configure(img v1.Image, def *imageDef, p v1.Platform) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: b.created}
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	for k, v := range def.labels {
		cf.Config.Labels[k] = v
	}
	if def.user != "" {
		cf.Config.User = def.user
	}
	if def.workdir != "" {
		cf.Config.WorkingDir = def.workdir
	}
	// As Docker: an ENTRYPOINT drops the CMD inherited from the base unless this Dockerfile sets one.
	if def.entrypointSet {
		cf.Config.Entrypoint = def.entrypoint
		if !def.cmdSet {
			cf.Config.Cmd = nil
		}
	}
	if def.cmdSet {
		cf.Config.Cmd = def.cmd
	}
	return mutate.ConfigFile(img, cf)
}

// contextEntries lists the files one COPY takes from the build context, as Docker copies them: a directory's
// contents go under the destination; a file goes to the destination, or into it when it ends in "/".
func (b *builder) contextEntries(op copyOp) ([]entry, error) {
	var out []entry
	for _, src := range op.srcs {
		abs := filepath.Join(b.context, filepath.FromSlash(src))
		st, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			dst := op.dst
			if strings.HasSuffix(dst, "/") || len(op.srcs) > 1 {
				dst = path.Join(dst, path.Base(src))
			}
			data, err := os.ReadFile(abs)
			if err != nil {
				return nil, err
			}
			out = append(out, entry{path: path.Clean(dst), mode: int64(st.Mode().Perm()), data: data})
			continue
		}
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(abs, p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			dst := path.Join(op.dst, filepath.ToSlash(rel))
			switch {
			case d.IsDir():
				out = append(out, entry{path: dst, mode: int64(info.Mode().Perm()), dir: true})
			case info.Mode().IsRegular():
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				out = append(out, entry{path: dst, mode: int64(info.Mode().Perm()), data: data})
			default:
				return fmt.Errorf("%s: only regular files and directories are copied", p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// binaryEntry cross-compiles the builder stage's go build for p (cached under b.work) as the COPY's file.
func (b *builder) binaryEntry(ctx context.Context, gb goBuild, op copyOp, p v1.Platform) ([]entry, error) {
	if len(op.srcs) != 1 || op.srcs[0] != gb.output {
		return nil, fmt.Errorf("COPY --from=%s %v: the stage builds only %s", op.from, op.srcs, gb.output)
	}
	out := filepath.Join(b.work, op.from+"-"+p.OS+"-"+p.Architecture, path.Base(gb.output))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	args := append(append([]string{"build"}, gb.flags...), "-o", out, gb.pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.context
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	_, _ = fmt.Fprintf(b.log, "imagebuild: GOOS=%s GOARCH=%s CGO_ENABLED=0 go %s\n", p.OS, p.Architecture, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w", gb.pkg, p, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	dst := op.dst
	if strings.HasSuffix(dst, "/") {
		dst = path.Join(dst, path.Base(gb.output))
	}
	return []entry{{path: path.Clean(dst), mode: 0o755, data: data}}, nil
}

// applyChmods folds `RUN chmod` of copied files into their entries; a chmod of a file no COPY wrote fails.
func applyChmods(chmods map[string]int64, layers [][]entry) error {
	for p, mode := range chmods {
		found := false
		for _, es := range layers {
			for i := range es {
				if es[i].path == path.Clean(p) {
					es[i].mode, found = mode, true
				}
			}
		}
		if !found {
			return fmt.Errorf("RUN chmod %s: no COPY writes it (only copied files can change mode without an engine)", p)
		}
	}
	return nil
}

// layer writes entries as one tar layer: root-owned, timestamps b.created; parent directories a COPY
// creates are 0755 (as the bases' /usr/bin and as Docker creates missing ones).
func (b *builder) layer(es []entry, mt types.MediaType) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	written := map[string]bool{}
	dir := func(p string, mode int64) error {
		if written[p] {
			return nil
		}
		written[p] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: mode,
			ModTime: b.created, Format: tar.FormatPAX})
	}
	for _, e := range es {
		var parents []string
		for d := path.Dir(e.path); d != "/" && d != "."; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := dir(d, 0o755); err != nil {
				return nil, err
			}
		}
		if e.dir {
			if err := dir(e.path, e.mode); err != nil {
				return nil, err
			}
			continue
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(e.path, "/"), Mode: e.mode,
			Size: int64(len(e.data)), ModTime: b.created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithCompressedCaching, tarball.WithMediaType(mt))
}
