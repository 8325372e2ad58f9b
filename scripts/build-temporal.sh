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
. "$root/scripts/lib/gobuild.sh"
complete() {
  gobuild_has temporal-server temporal-sql-tool && [ -d "$out/schema/postgresql/v12/temporal" ]
}
gobuild_begin temporal "$root/lockwright/controlplane/modules/temporal" \
  "${LOCKWRIGHT_TEMPORAL_CACHE:-$HOME/.cache/lockwright/temporal}"
rm -rf "$out/schema"
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
gobuild_end
