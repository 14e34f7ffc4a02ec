#!/usr/bin/env bash
# Runs every test of the main module (`make test`'s last step) with GO_TEST_FLAGS. The controllers'
# scenario suite, the longest package by far, runs as two shards side by side (AGENT_FORGE_SUITE_SHARD,
# controllers/shard_test.go), each its own process beside `go test` of every other package. The shards
# mostly wait on the API server, Cluster API and the simulated world, so they cost little CPU; inside
# `go test ./...` one shard held one of its two package slots for its whole length while every other
# package queued for the other slot. Fails when any fails; the shards' output is printed after the rest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

read -r -a flags <<<"${GO_TEST_FLAGS:--race -count=1 -timeout 35m}"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS

# Compile the controllers' test binary once (no test runs), so both invocations below only link it.
go test "${flags[@]}" -run '^$' ./controllers/ >/dev/null

suite="$(go list ./controllers/)"
mapfile -t others < <(go list ./... | grep -vxF "$suite")

log1="$(mktemp)"
log2="$(mktemp)"
mainlog="$(mktemp)"
pids=()
cleanup() {
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true
  rm -f "$log1" "$log2" "$mainlog"
}
trap cleanup EXIT
# Every test of the controllers package (its unit tests too) runs in shard 1; shard 2 runs only the
# suite's other half.
AGENT_FORGE_SUITE_SHARD=1/2 go test "${flags[@]}" ./controllers/ >"$log1" 2>&1 &
pids+=("$!")
AGENT_FORGE_SUITE_SHARD=2/2 go test "${flags[@]}" -run '^TestControllers$' ./controllers/ >"$log2" 2>&1 &
pids+=("$!")

rc=0
go test "${flags[@]}" "${others[@]}" 2>&1 | tee "$mainlog" || rc=$?
# The crash campaign's seam is compiled only with the crashpoints tag (the shipped binary has none): its
# own tests run in such a build.
go test "${flags[@]}" -tags crashpoints -run 'CrashSeam' ./cmd/app/ 2>&1 | tee -a "$mainlog" || rc=$?
shard=0
wait "${pids[0]}" || shard=$?
wait "${pids[1]}" || shard=$?
pids=()
echo "controllers package, scenario suite shard 1/2:"
cat "$log1"
echo "controllers scenario suite, shard 2/2:"
cat "$log2"
# A data race fails a test binary with only "race detected during execution of test" at its end; the
# report itself can be thousands of lines above. Repeat the first of each log's reports last, where a
# CI log's tail shows it.
for f in "$mainlog" "$log1" "$log2"; do
  if grep -q "WARNING: DATA RACE" "$f"; then
    case "$f" in "$log1") what="controllers shard 1/2" ;; "$log2") what="controllers shard 2/2" ;; *) what="go test of the other packages" ;; esac
    echo "first data race report of $what ($(grep -c "WARNING: DATA RACE" "$f") in all):"
    sed -n '/WARNING: DATA RACE/,/^==================$/p' "$f" | head -80
  fi
done
if ((rc != 0 || shard != 0)); then
  exit 1
fi
