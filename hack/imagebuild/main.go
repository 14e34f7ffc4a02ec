// Command imagebuild builds the operator's images for every platform in `platforms` (linux/amd64, linux/arm64)
// as multi-arch indexes, without a container engine: it interprets the repository's Dockerfiles (base, labels,
// user, entrypoint, COPY from the context), cross-compiles the builder stage's `go build` (CGO_ENABLED=0),
// pulls the base per platform with a deadline and writes the result with go-containerregistry, to a registry
// (-push, credentials from the docker config: authn.DefaultKeychain) or to an OCI layout directory.
// With -push and -lock it records each pushed index digest in the lock (hack/image-digests.sh record) that
// `make bundle-release` / `catalog-release` resolve images from.
//
//	go run ./hack/imagebuild -image manager=quay.io/containeroo/agent-forge-operator:v0.2.0 -push -lock LOCK
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pairs is a repeatable NAME=VALUE flag, in the order given.
type pairs struct {
	keys []string
	m    map[string]string
}

func (p *pairs) String() string { return strings.Join(p.keys, ",") }

func (p *pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("%q is not NAME=VALUE", s)
	}
	if p.m == nil {
		p.m = map[string]string{}
	}
	if _, dup := p.m[k]; !dup {
		p.keys = append(p.keys, k)
	}
	p.m[k] = v
	return nil
}

// options is one run of the tool.
type options struct {
	context   string
	images    pairs // image name -> reference (tag) to publish as
	bases     pairs
	buildArgs pairs
	push      bool
	ociLayout string
	lock      string
	work      string
	timeout   time.Duration
	keychain  authn.Keychain
	log       io.Writer
}

func main() {
	o := options{keychain: authn.DefaultKeychain, log: os.Stderr}
	flag.StringVar(&o.context, "context", ".", "build context: the repository root")
	flag.Var(&o.images, "image", "NAME=REFERENCE to build (manager, must-gather, bundle, catalog); repeatable, built in order")
	flag.Var(&o.bases, "base", "NAME=REFERENCE replacing the FROM of that image's Dockerfile (tests, mirrors); repeatable")
	flag.Var(&o.buildArgs, "build-arg", "ARG=VALUE as docker build --build-arg (VERSION, RELEASE); repeatable")
	flag.BoolVar(&o.push, "push", false, "push each index to its reference (docker config credentials)")
	flag.StringVar(&o.ociLayout, "oci-layout", "", "write the indexes to this OCI layout directory instead of pushing")
	flag.StringVar(&o.lock, "lock", "", "with -push: record each pushed digest in this lock (hack/image-digests.sh record)")
	flag.StringVar(&o.work, "work", "", "directory for the cross-compiled binaries (default: a temporary one)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "deadline for the whole run: builds, pulls and pushes")
	flag.Parse()
	if _, err := buildAll(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// buildAll builds and publishes every image of o; it returns the pushed (or written) digest per reference.
func buildAll(ctx context.Context, o options) (map[string]v1.Hash, error) {
	if len(o.images.keys) == 0 {
		return nil, errors.New("no -image given")
	}
	if o.push == (o.ociLayout != "") {
		return nil, errors.New("give exactly one of -push and -oci-layout")
	}
	if o.lock != "" && !o.push {
		return nil, errors.New("-lock records pushed digests: it needs -push")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	ctxDir, err := filepath.Abs(o.context)
	if err != nil {
		return nil, err
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "imagebuild-"); err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(work) }()
	}
	b := &builder{
		context:   ctxDir,
		work:      work,
		buildArgs: o.buildArgs.m,
		bases:     o.bases.m,
		created:   sourceDateEpoch(),
		remote:    []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain)},
		log:       o.log,
	}
	digests := map[string]v1.Hash{}
	for _, imageName := range o.images.keys {
		ref := o.images.m[imageName]
		r, err := name.ParseReference(ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", imageName, err)
		}
		idx, err := b.build(ctx, imageName)
		if err != nil {
			return nil, err
		}
		d, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		if o.push {
			if err := remote.WriteIndex(r, idx, b.remote...); err != nil {
				return nil, fmt.Errorf("push %s: %w", ref, err)
			}
		} else if err := writeLayout(o.ociLayout, ref, idx); err != nil {
			return nil, err
		}
		_, _ = fmt.Fprintf(o.log, "imagebuild: %s %s@%s\n", imageName, ref, d)
		digests[ref] = d
		if o.lock != "" {
			if err := record(ctx, ctxDir, o.lock, ref, d); err != nil {
				return nil, err
			}
		}
	}
	return digests, nil
}

// writeLayout adds idx to the OCI layout at dir under the reference's name, replacing an earlier build of it.
func writeLayout(dir, ref string, idx v1.ImageIndex) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return err
		}
	}
	const refName = "org.opencontainers.image.ref.name"
	ann := map[string]string{refName: ref}
	return p.ReplaceIndex(idx, match.Annotation(refName, ref), layout.WithAnnotations(ann))
}

// record writes the lock line through hack/image-digests.sh, the lock's one writer.
func record(ctx context.Context, ctxDir, lock, ref string, d v1.Hash) error {
	cmd := exec.CommandContext(ctx, filepath.Join(ctxDir, "hack", "image-digests.sh"), "record", ref, d.String())
	cmd.Env = append(os.Environ(), "IMAGE_DIGESTS_LOCK="+lock)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("record %s: %w: %s", ref, err, out)
	}
	return nil
}

// sourceDateEpoch is the time stamped on layers and configs: SOURCE_DATE_EPOCH when set, else the Unix epoch,
// so the same sources give the same digests.
func sourceDateEpoch() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}
