# vSphere tooling: govc v0.56.0 built from govmomi's command packages (hack/tools/govc, its own module),
# used by `make bench-vsphere` (which also builds it on demand).

GOVC := $(LOCALBIN)/govc

.PHONY: govc
govc: $(GOVC) ## Build bin/govc (govmomi v0.56.0) from hack/tools/govc.

$(GOVC): hack/tools/govc/main.go hack/tools/govc/go.mod hack/tools/govc/go.sum
	cd hack/tools/govc && GOWORK=off go build -o $(GOVC) .
