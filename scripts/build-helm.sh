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
. "$root/scripts/lib/gobuild.sh"
complete() { gobuild_has helm; }
gobuild_begin helm "$root/lockwright/controlplane/modules/helm" \
  "${LOCKWRIGHT_HELM_CACHE:-$HOME/.cache/lockwright/helm}"
# `helm version` reports the module's version, as upstream's Makefile sets it from the tag.
version="$(cd "$module" && go list -m -f '{{.Version}}' helm.sh/helm/v4)"
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version"
ldflags="$ldflags -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
step "building helm $version once into $out (a few minutes the first time)"
(cd "$module" && go build -trimpath -ldflags "$ldflags" -o "$out/bin.partial/helm" \
  helm.sh/helm/v4/cmd/helm)
gobuild_end
