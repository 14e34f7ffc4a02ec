# Sourced by the peer build scripts (peers-build.sh, olm-build.sh), which define log(): the stamp of a
# module's sources and a progress line while a long build runs.

# source_stamp prints a hash of the Go sources and module files under $1: an edit rebuilds (a link, with
# the Go build cache kept), an unchanged tree is reused at once.
source_stamp() {
  (cd "$1" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
}

progress_pid=""
# start_progress logs every 30 s that $1 is still building, with $2 saying how long it usually takes.
start_progress() {
  local what="$1" hint="$2" started=$SECONDS
  ( while sleep 30; do log "still building $what ($((SECONDS - started))s; $hint)"; done ) &
  progress_pid=$!
}
stop_progress() { [[ -n "$progress_pid" ]] && kill "$progress_pid" 2>/dev/null || true; progress_pid=""; }
