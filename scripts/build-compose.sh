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
. "$root/scripts/lib/gobuild.sh"
complete() { gobuild_has docker-compose; }
gobuild_begin compose "$root/tests/fixtures/compose/plugin" \
  "${LOCKWRIGHT_COMPOSE_CACHE:-$HOME/.cache/lockwright/compose}"
version="$(cd "$module" && go list -m -f '{{.Version}}' github.com/docker/compose/v2)"
step "building docker compose $version once into $out (minutes on 2 cores the first time)"
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$version" \
  -o "$out/bin.partial/docker-compose" github.com/docker/compose/v2/cmd)
gobuild_end
