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
LABEL org.opencontainers.image.source="https://github.com/containeroo/agent-forge-operator" \
      org.opencontainers.image.title="agent-forge-operator"
WORKDIR /
COPY --from=builder /workspace/manager /manager
USER 65532:65532

ENTRYPOINT ["/manager"]
