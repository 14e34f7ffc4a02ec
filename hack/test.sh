#!/usr/bin/env bash
# Runs every test of the main module (`make test`'s last step) with GO_TEST_FLAGS. The controllers'
# scenario suite, the longest package by far, runs as SUITE_SHARDS shards side by side (default 2;
# AGENT_FORGE_SUITE_SHARD, controllers/shard_test.go), each its own process beside `go test` of every other
# package. The shards mostly wait on the API server, Cluster API and the simulated world; inside
# `go test ./...` one shard held one of its two package slots for its whole length while every other
# package queued for the other slot. Three shards were tried (2026-12-06, 2-core machine): the slowest
# shard went from ~1400 s to ~1300 s, but each shard's API server, CAPI and simulator took CPU from the
# other packages, which then finished last, and the image test's cold arm64 build of the manager ran out
# of its 15 min. make test's checks (test-checks: vet, lint, bundle, catalog, rules, docs, floor, and the
# small tools they build) run here beside the shards, before the other packages; the long tool builds stay
# before (hack/mk/prebuild.mk). Fails when any fails; the shards' output is printed after the rest, then
# where the time went.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

read -r -a flags <<<"${GO_TEST_FLAGS:--race -count=1 -timeout 35m}"
shards="${SUITE_SHARDS:-2}"
KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"
export KUBEBUILDER_ASSETS

# cpu_now prints the machine's idle and total CPU jiffies (/proc/stat), for the closing line's idle shares.
cpu_now() { awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit}' /proc/stat 2>/dev/null || echo "0 0"; }
idle_since() { # idle_since "<idle> <total>" [until "<idle> <total>"]: the idle percentage in between
  local a b
  read -r -a a <<<"$1"
  read -r -a b <<<"${2:-$(cpu_now)}"
  if ((b[1] > a[1])); then echo "$((100 * (b[0] - a[0]) / (b[1] - a[1])))%"; else echo "?"; fi
}
# Compile the controllers' test binary once (no test runs), so every invocation below only links it.
go test "${flags[@]}" -run '^$' ./controllers/ >/dev/null

suite="$(go list ./controllers/)"
# The other packages, the longest first: go test starts builds and runs in the order it is given, and in
# alphabetical order the longest ones (the image build, the e2e suite) started late and ran on after
# everything else, one core idle (2026-12-07: 600 s at the end with the CPU half idle). The chaos campaign
# goes last on purpose: its invariants bound how long demand may wait, and beside both shards at load 15 one
# of its runs missed a 45 s bound that it keeps alone (2026-12-07, seed 168961152 run 14).
module="$(go list -m)"
longest=(hack/imagebuild test/e2e internal/vsphere test/sim/world test/olm/realolm test/rbac controllers/vsphereagent)
last=(test/chaos)
mapfile -t others < <(
  printf '%s\n' "${longest[@]/#/$module/}"
  go list ./... | grep -vxF -e "$suite" "${longest[@]/#/-e$module/}" "${last[@]/#/-e$module/}"
  printf '%s\n' "${last[@]/#/$module/}"
)

mainlog="$(mktemp)"
logs=()
pids=()
cleanup() {
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true
  rm -f "$mainlog" "${logs[@]}" "${logs[@]/%/.seconds}" "${logs[@]/%/.ended}"
}
trap cleanup EXIT
# Every test of the controllers package (its unit tests too) runs in shard 1; the other shards run only
# their share of the suite.
# Each shard also records how long each of its spec files took (controllers/testdata/spec-seconds.tsv is
# refreshed from these) and when it ended.
suite_began=$SECONDS
cpu_began="$(cpu_now)"
for ((k = 1; k <= shards; k++)); do
  logs+=("$(mktemp)")
  run=()
  ((k > 1)) && run=(-run '^TestControllers$')
  (
    rc=0
    AGENT_FORGE_SUITE_SHARD="$k/$shards" AGENT_FORGE_SPEC_TIMES="${logs[k - 1]}.seconds" \
      go test "${flags[@]}" "${run[@]}" ./controllers/ >"${logs[k - 1]}" 2>&1 || rc=$?
    echo $((SECONDS - suite_began)) >"${logs[k - 1]}.ended"
    exit "$rc"
  ) &
  pids+=("$!")
done

rc=0
# Beside the shards (which mostly wait on their API servers, CAPI and the world): the checks and the small
# tools they build, then every other package (some of which use those tools: kustomize, opm).
make --no-print-directory test-checks 2>&1 | tee "$mainlog" || rc=$?
checks_ended=$((SECONDS - suite_began))
cpu_checks="$(cpu_now)"
go test "${flags[@]}" "${others[@]}" 2>&1 | tee -a "$mainlog" || rc=$?
# The crash campaign's seam is compiled only with the crashpoints tag (the shipped binary has none): its
# own tests run in such a build.
go test "${flags[@]}" -tags crashpoints -run 'CrashSeam' ./cmd/app/ 2>&1 | tee -a "$mainlog" || rc=$?
others_ended=$((SECONDS - suite_began))
cpu_others="$(cpu_now)"
shard=0
for pid in "${pids[@]}"; do
  wait "$pid" || shard=$?
done
cpu_shards="$(cpu_now)"
pids=()
for ((k = 1; k <= shards; k++)); do
  echo "controllers scenario suite, shard $k/$shards:"
  cat "${logs[k - 1]}"
done
# A data race fails a test binary with only "race detected during execution of test" at its end; the
# report itself can be thousands of lines above. Repeat the first of each log's reports last, where a
# CI log's tail shows it.
for ((k = 0; k <= shards; k++)); do
  if ((k == 0)); then f="$mainlog" what="go test of the other packages"; else f="${logs[k - 1]}" what="controllers shard $k/$shards"; fi
  if grep -q "WARNING: DATA RACE" "$f"; then
    echo "first data race report of $what ($(grep -c "WARNING: DATA RACE" "$f") in all):"
    sed -n '/WARNING: DATA RACE/,/^==================$/p' "$f" | head -80
  fi
done
# Where the time went, last, where a CI log's tail shows it (seconds since the shards started; the
# make targets before this script and the suite's compile are in "before").
echo "spec file seconds (all shards; refresh controllers/testdata/spec-seconds.tsv from these):"
cat "${logs[@]/%/.seconds}" 2>/dev/null | sort -t$'\t' -k2,2 -rn || true
timing="timing: before the shards $((suite_began + ${AGENT_FORGE_TEST_BEFORE:-0})) s"
for ((k = 1; k <= shards; k++)); do
  timing+=", shard $k/$shards $(cat "${logs[k - 1]}.ended" 2>/dev/null || echo '?') s"
done
echo "$timing, checks $checks_ended s, other packages $others_ended s; CPU idle: checks $(idle_since "$cpu_began" "$cpu_checks"), other packages $(idle_since "$cpu_checks" "$cpu_others"), after them $(idle_since "$cpu_others" "$cpu_shards")"
if ((rc != 0 || shard != 0)); then
  exit 1
fi
