#!/usr/bin/env bash
# Builds helm, which the tests lint, render and install deploy/chart/lockwright with, from
# the Go module proxy (helm.sh/helm/v4) through a module of ours,
# lockwright/controlplane/modules/helm, whose go.mod and go.sum pin every version. As
# scripts/build-control-plane.sh does: the binary goes to a directory keyed by those files
# and the Go version, so a second run finds it at once; the path is the last line printed.
#   LOCKWRIGHT_HELM_CACHE  where keyed directories live (~/.cache/lockwright/helm)
# A cold build takes about 4.5 CPU-minutes (2-3 minutes on 2 idle cores; 13 measured on a
# busy machine) and 430 MB of modules (121); the binary is 64 MB.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/lockwright/controlplane/modules/helm"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Go's own install directory, for a shell whose PATH lacks it.
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "error: go is missing (Go 1.26 builds helm)" >&2; exit 1; }

key="$( { go version; cat "$module"/go.{mod,sum} "$0"; } | sha256sum | cut -c1-16)"
cache="${LOCKWRIGHT_HELM_CACHE:-$HOME/.cache/lockwright/helm}"
out="$cache/$key"
if [ -x "$out/bin/helm" ]; then echo "$out/bin"; exit 0; fi
# One build at a time (parallel test workers may all ask); the others then find it done.
mkdir -p "$cache" && exec 9>"$cache/.build.lock" && flock 9
if [ -x "$out/bin/helm" ]; then echo "$out/bin"; exit 0; fi

step() { echo "[helm] $*" >&2; }
started=$SECONDS
rm -rf "$out/bin.partial" && mkdir -p "$out/bin.partial"
# `helm version` reports the module's version, as upstream's Makefile sets it from the tag.
version="$(cd "$module" && go list -m -f '{{.Version}}' helm.sh/helm/v4)"
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version"
ldflags="$ldflags -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
step "building helm $version once into $out (a few minutes the first time)"
(cd "$module" && go build -trimpath -ldflags "$ldflags" -o "$out/bin.partial/helm" \
  helm.sh/helm/v4/cmd/helm)
rm -rf "$out/bin" && mv "$out/bin.partial" "$out/bin"
# Builds of other versions are of no further use: keep the cache to this one.
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
step "built in $((SECONDS - started)) s into $out/bin"
echo "$out/bin"
