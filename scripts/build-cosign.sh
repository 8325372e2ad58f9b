#!/usr/bin/env bash
# Builds the real cosign (github.com/sigstore/cosign/v2, cmd/cosign) from the Go module
# proxy through scripts/cosign/, whose go.mod and go.sum pin every version: the independent
# signer of lockwright's signature tests. The binary goes to a directory keyed by those
# files and the Go version, so a second run finds it at once; the path of the bin directory
# is the last line printed, as scripts/build-control-plane.sh does.
#   LOCKWRIGHT_COSIGN_CACHE  where keyed directories live (~/.cache/lockwright/cosign)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/lib/gobuild.sh"
complete() { gobuild_has cosign; }
gobuild_begin cosign "$root/scripts/cosign" \
  "${LOCKWRIGHT_COSIGN_CACHE:-$HOME/.cache/lockwright/cosign}" "$root/scripts/cosign/tools.go"
version="$(cd "$module" && go list -m -f '{{.Version}}' github.com/sigstore/cosign/v2)"
step "building cosign $version once into $out"
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version" \
  -o "$out/bin.partial/cosign" github.com/sigstore/cosign/v2/cmd/cosign)
gobuild_end
