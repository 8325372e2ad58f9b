#!/usr/bin/env bash
# Builds the Temporal cluster lockwright's tests and `dev up --temporal cluster` run:
# temporal-server (go.temporal.io/server/cmd/server, all four services in one binary) and
# temporal-sql-tool (go.temporal.io/server/cmd/tools/sql), from the Go module proxy through
# lockwright/controlplane/modules/temporal, whose go.mod and go.sum pin every version.
# PostgreSQL's schema (schema/postgresql/v12) is copied from the module beside the binaries.
# Binaries go to a directory keyed by those files and the Go version, so a second run finds
# them and takes a second; the path is the last line printed.
#   LOCKWRIGHT_TEMPORAL_CACHE  where keyed directories live (~/.cache/lockwright/temporal)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/lockwright/controlplane/modules/temporal"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Go's own install directory, for a shell whose PATH lacks it.
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "error: go is missing (Go 1.26 builds Temporal)" >&2; exit 1; }

key="$( { go version; cat "$module"/go.{mod,sum} "$0"; } | sha256sum | cut -c1-16)"
cache="${LOCKWRIGHT_TEMPORAL_CACHE:-$HOME/.cache/lockwright/temporal}"
out="$cache/$key"
binaries=(temporal-server temporal-sql-tool)
complete() {
  for b in "${binaries[@]}"; do [ -x "$out/bin/$b" ] || return 1; done
  [ -d "$out/schema/postgresql/v12/temporal" ]
}
if complete; then echo "$out/bin"; exit 0; fi
# One build at a time (parallel test workers may all ask); the others then find it done.
mkdir -p "$cache" && exec 9>"$cache/.build.lock" && flock 9
if complete; then echo "$out/bin"; exit 0; fi

rm -rf "$out/bin.partial" "$out/schema" && mkdir -p "$out/bin.partial"
step() { echo "[temporal] $*" >&2; }
started=$SECONDS
version="$(cd "$module" && go list -m -f '{{.Version}}' go.temporal.io/server)"
step "building Temporal Server $version once into $out (several minutes on 2 cores the first time)"
(cd "$module" && go build -trimpath -ldflags "-s -w" -o "$out/bin.partial/temporal-server" \
  go.temporal.io/server/cmd/server)
step "building temporal-sql-tool"
(cd "$module" && go build -trimpath -ldflags "-s -w" -o "$out/bin.partial/temporal-sql-tool" \
  go.temporal.io/server/cmd/tools/sql)
# The PostgreSQL schema temporal-sql-tool applies, from the module the server was built from.
source_dir="$(cd "$module" && go list -m -f '{{.Dir}}' go.temporal.io/server)"
mkdir -p "$out/schema/postgresql" && cp -r "$source_dir/schema/postgresql/v12" "$out/schema/postgresql/"
chmod -R u+w "$out/schema"
rm -rf "$out/bin" && mv "$out/bin.partial" "$out/bin"
# Builds of other versions are of no further use: keep the cache to this one.
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
step "built in $((SECONDS - started)) s into $out/bin"
echo "$out/bin"
