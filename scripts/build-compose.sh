#!/usr/bin/env bash
# Builds the docker compose CLI plugin the compose test runs (Compose v2, the plugin users
# have; Debian's docker-compose 1.29 refuses the file's top-level `name`), from the Go module
# proxy through tests/fixtures/compose/plugin, whose go.mod and go.sum pin every version.
# The binary goes to a directory keyed by those files and the Go version, so a second run
# finds it and takes a second; the directory is the last line printed. It runs as
# `docker-compose` on its own or, copied to ~/.docker/cli-plugins/, as `docker compose`.
#   LOCKWRIGHT_COMPOSE_CACHE  where keyed directories live (~/.cache/lockwright/compose)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/tests/fixtures/compose/plugin"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Go's own install directory, for a shell whose PATH lacks it.
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "error: go is missing (Go 1.26 builds docker compose)" >&2; exit 1; }

key="$( { go version; cat "$module"/go.{mod,sum} "$0"; } | sha256sum | cut -c1-16)"
cache="${LOCKWRIGHT_COMPOSE_CACHE:-$HOME/.cache/lockwright/compose}"
out="$cache/$key"
if [ -x "$out/bin/docker-compose" ]; then echo "$out/bin"; exit 0; fi
# One build at a time (parallel test workers may all ask); the others then find it done.
mkdir -p "$cache" && exec 9>"$cache/.build.lock" && flock 9
if [ -x "$out/bin/docker-compose" ]; then echo "$out/bin"; exit 0; fi

rm -rf "$out/bin.partial" && mkdir -p "$out/bin.partial"
step() { echo "[compose] $*" >&2; }
started=$SECONDS
version="$(cd "$module" && go list -m -f '{{.Version}}' github.com/docker/compose/v2)"
step "building docker compose $version once into $out (minutes on 2 cores the first time)"
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$version" \
  -o "$out/bin.partial/docker-compose" github.com/docker/compose/v2/cmd)
rm -rf "$out/bin" && mv "$out/bin.partial" "$out/bin"
# Builds of other versions are of no further use: keep the cache to this one.
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
step "built in $((SECONDS - started)) s into $out/bin"
echo "$out/bin"
