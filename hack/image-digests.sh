#!/usr/bin/env bash
# Resolves the images the OLM bundle and catalog reference to digests, so a mirrored (disconnected) install
# can find them (an ImageDigestMirrorSet only redirects pulls by digest).
#
#   hack/image-digests.sh resolve [--required] IMAGE...
#       Prints one reference per IMAGE, in order. An image already given by digest is kept. Otherwise its
#       digest comes from the lock file (lines "image:tag sha256:<64 hex>", written by record), or, with
#       --required only, from the registry (skopeo or crane, when installed and the registry answers within
#       IMAGE_DIGESTS_TIMEOUT). Without --required an image the lock does not know stays by tag (the
#       development render: reproducible, never asks a registry). With --required an unresolved image fails.
#   hack/image-digests.sh record IMAGE DIGEST
#       Records IMAGE's pushed digest (sha256:<64 hex>) in the lock, replacing an earlier line for IMAGE.
#       hack/imagebuild calls it for each image it pushes (make release).
#
# The lock is IMAGE_DIGESTS_LOCK (default config/manifests/image-digests.lock).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock="${IMAGE_DIGESTS_LOCK:-$root/config/manifests/image-digests.lock}"
timeout_s="${IMAGE_DIGESTS_TIMEOUT:-60}"

die() { printf 'image-digests: %s\n' "$*" >&2; exit 1; }
is_digest() { [[ "$1" =~ ^sha256:[0-9a-f]{64}$ ]]; }
by_digest() { [[ "$1" =~ @sha256:[0-9a-f]{64}$ ]]; }
# repo drops the tag (a colon after the last slash; a registry port stays).
repo() {
  local image="$1" last="${1##*/}"
  [[ "$last" == *:* ]] && image="${image%:*}"
  printf '%s' "$image"
}

from_lock() {
  local want="$1" image digest rest
  [[ -f "$lock" ]] || return 1
  while read -r image digest rest; do
    [[ -z "$image" || "$image" == \#* ]] && continue
    [[ "$image" == "$want" ]] || continue
    if ! is_digest "$digest"; then
      printf "image-digests: %s: %s has no valid digest (want sha256:<64 hex>, got '%s')\n" "$lock" "$image" "$digest" >&2
      return 2
    fi
    printf '%s' "$digest"
    return 0
  done <"$lock"
  return 1
}

# from_registry asks the registry, with a deadline; an absent tool, an error or a timeout is "unknown".
from_registry() {
  local image="$1" out
  if command -v skopeo >/dev/null 2>&1; then
    if out="$(timeout "$timeout_s" skopeo inspect --format '{{.Digest}}' "docker://$image" 2>/dev/null)" && is_digest "$out"; then
      printf '%s' "$out"
      return 0
    fi
  fi
  if command -v crane >/dev/null 2>&1; then
    if out="$(timeout "$timeout_s" crane digest "$image" 2>/dev/null)" && is_digest "$out"; then
      printf '%s' "$out"
      return 0
    fi
  fi
  return 1
}

resolve() {
  local required=false
  if [[ "${1:-}" == --required ]]; then
    required=true
    shift
  fi
  (($#)) || die "resolve: no image given"
  local image digest rc refs=() missing=()
  for image in "$@"; do
    rc=0
    digest="$(from_lock "$image")" || rc=$?
    ((rc == 2)) && exit 1
    if by_digest "$image"; then
      refs+=("$image")
    elif ((rc == 0)); then
      refs+=("$(repo "$image")@$digest")
    elif $required && digest="$(from_registry "$image")"; then
      refs+=("$(repo "$image")@$digest")
    elif $required; then
      missing+=("$image")
    else
      refs+=("$image")
    fi
  done
  if ((${#missing[@]})); then
    {
      echo "image-digests: cannot resolve to a digest: ${missing[*]}"
      echo "  not in the lock $lock, and no registry tool (skopeo, crane) answered within ${timeout_s}s."
      echo "  Push the images with make release (it records each digest in the lock), add an"
      echo "  'image:tag sha256:<digest>' line to the lock, or pass the image"
      echo "  by digest (IMG=repo@sha256:<digest>)."
    } >&2
    exit 1
  fi
  printf '%s\n' "${refs[@]}"
}

record() {
  (($# == 2)) || die "usage: record IMAGE DIGEST"
  local image="$1" digest="$2"
  by_digest "$image" && die "record: $image is already a digest reference; record the tag that was pushed"
  is_digest "$digest" || die "record: $image: '$digest' is not sha256:<64 hex>"
  local tmp
  tmp="$(mktemp)"
  if [[ -f "$lock" ]]; then
    awk -v img="$image" '$1 != img' "$lock" >"$tmp"
  fi
  printf '%s %s\n' "$image" "$digest" >>"$tmp"
  mv "$tmp" "$lock"
  printf 'image-digests: recorded %s %s in %s\n' "$image" "$digest" "$lock" >&2
}

cmd="${1:-}"
shift || true
case "$cmd" in
resolve) resolve "$@" ;;
record) record "$@" ;;
*) die "usage: $0 resolve [--required] IMAGE... | record IMAGE DIGEST" ;;
esac
