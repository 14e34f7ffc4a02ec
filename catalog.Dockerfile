# File-based catalog image serving catalog/ with opm. Build: make catalog-build (needs a container engine).
# The base image carries the opm binary and its registry server; pin it to the opm release that validated the catalog.
FROM quay.io/operator-framework/opm:v1.69.0

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

COPY catalog /configs

# Pre-build the serve cache so the catalog pod starts fast.
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

LABEL operators.operatorframework.io.index.configs.v1=/configs
