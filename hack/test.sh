#!/usr/bin/env bash
# Runs every test of the main module (`make test`'s last step): go test ./... with GO_TEST_FLAGS, while the
# controllers' scenario suite, the longest package, runs as two shards side by side (one inside go test
# ./..., the other beside it; AGENT_FORGE_SUITE_SHARD, controllers/shard_test.go). The scenarios mostly
# wait on the API server, Cluster API and the simulated world, so the second shard costs little CPU and
# takes about half the suite's time off the run. Fails when either fails; the second shard's output is
# printed after the rest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

read -r -a flags <<<"${GO_TEST_FLAGS:--race -count=1 -timeout 35m}"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS

# Compile the controllers' test binary once (no test runs), so both invocations below only link it.
go test "${flags[@]}" -run '^$' ./controllers/ >/dev/null

log="$(mktemp)"
mainlog="$(mktemp)"
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  rm -f "$log" "$mainlog"
}
trap cleanup EXIT
AGENT_FORGE_SUITE_SHARD=2/2 go test "${flags[@]}" -run '^TestControllers$' ./controllers/ >"$log" 2>&1 &
pid=$!

rc=0
AGENT_FORGE_SUITE_SHARD=1/2 go test "${flags[@]}" ./... 2>&1 | tee "$mainlog" || rc=$?
# The crash campaign's seam is compiled only with the crashpoints tag (the shipped binary has none): its
# own tests run in such a build.
go test "${flags[@]}" -tags crashpoints -run 'CrashSeam' ./cmd/app/ 2>&1 | tee -a "$mainlog" || rc=$?
shard=0
wait "$pid" || shard=$?
pid=""
echo "controllers scenario suite, shard 2/2:"
cat "$log"
# A data race fails a test binary with only "race detected during execution of test" at its end; the
# report itself can be thousands of lines above. Repeat the first of each log's reports last, where a
# CI log's tail shows it.
for f in "$mainlog" "$log"; do
  if grep -q "WARNING: DATA RACE" "$f"; then
    echo "first data race report of $([[ $f == "$log" ]] && echo "shard 2/2" || echo "go test ./...") ($(grep -c "WARNING: DATA RACE" "$f") in all):"
    sed -n '/WARNING: DATA RACE/,/^==================$/p' "$f" | head -80
  fi
done
if ((rc != 0 || shard != 0)); then
  exit 1
fi
