# Manager image: static Go binary on distroless, non-root. No govc: vSphere is driven through govmomi in-process.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
ENV GOTOOLCHAIN=local
# Cache module downloads in their own layer.
COPY go.mod go.sum ./
RUN go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o manager ./cmd

FROM gcr.io/distroless/static:nonroot
# The labels Red Hat's certification checks, and the licence under /licenses.
ARG VERSION=0.2.0
ARG RELEASE=1
LABEL name="containeroo/agent-forge-operator" \
      vendor="containeroo" \
      version="${VERSION}" \
      release="${RELEASE}" \
      summary="Turns HyperShift Agent-platform autoscaling into vSphere VM capacity." \
      description="Creates vSphere VMs that boot the Assisted Installer discovery ISO when a HyperShift NodePool's AgentMachines wait for Agents, prepares the Agents they register, ejects the ISO after install and cleans up after scale-down." \
      org.opencontainers.image.source="https://github.com/containeroo/agent-forge-operator" \
      org.opencontainers.image.title="agent-forge-operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /
COPY LICENSE /licenses/LICENSE
COPY --from=builder /workspace/manager /manager
USER 65532:65532

ENTRYPOINT ["/manager"]
