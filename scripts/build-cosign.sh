#!/usr/bin/env bash
# Builds the real cosign (github.com/sigstore/cosign/v2, cmd/cosign) from the Go module
# proxy through scripts/cosign/, whose go.mod and go.sum pin every version: the independent
# signer of lockwright's signature tests. The binary goes to a directory keyed by those
# files and the Go version, so a second run finds it at once; the path of the bin directory
# is the last line printed, as scripts/build-control-plane.sh does.
#   LOCKWRIGHT_COSIGN_CACHE  where keyed directories live (~/.cache/lockwright/cosign)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/scripts/cosign"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "error: go is missing (Go 1.26 builds cosign)" >&2; exit 1; }

key="$( { go version; cat "$module"/go.{mod,sum} "$module/tools.go" "$0"; } | sha256sum | cut -c1-16)"
cache="${LOCKWRIGHT_COSIGN_CACHE:-$HOME/.cache/lockwright/cosign}"
out="$cache/$key"
if [ -x "$out/bin/cosign" ]; then echo "$out/bin"; exit 0; fi
# One build at a time (parallel test workers may all ask); the others then find it done.
mkdir -p "$cache" && exec 9>"$cache/.build.lock" && flock 9
if [ -x "$out/bin/cosign" ]; then echo "$out/bin"; exit 0; fi

started=$SECONDS
version="$(cd "$module" && go list -m -f '{{.Version}}' github.com/sigstore/cosign/v2)"
echo "[cosign] building cosign $version once into $out" >&2
rm -rf "$out/bin.partial" && mkdir -p "$out/bin.partial"
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version" \
  -o "$out/bin.partial/cosign" github.com/sigstore/cosign/v2/cmd/cosign)
rm -rf "$out/bin" && mv "$out/bin.partial" "$out/bin"
# Builds of other versions are of no further use: keep the cache to this one.
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
echo "[cosign] built in $((SECONDS - started)) s into $out/bin" >&2
echo "$out/bin"
