# Sourced by scripts/build-*.sh: build Go binaries once from a pinned module of ours (its
# go.mod and go.sum name every version), into a directory keyed by those files, the Go
# version and the build scripts, so a second run finds them and takes a second. Parallel
# callers (test workers) take turns on a lock; the others then find the build done. The bin
# directory is the last line printed; progress lines start with "[name]".
#
#   gobuild_begin NAME MODULE CACHE [KEYFILE...]   exits 0 printing the bin dir when the
#                                                  caller's complete() holds; else locks and
#                                                  leaves $out/bin.partial empty to build in
#   step TEXT                                      a progress line
#   gobuild_end                                    publishes bin.partial as bin, drops
#                                                  other keys' builds, prints the bin dir
# The caller defines complete() (true when $out holds a whole build) before gobuild_begin.

gobuild_begin() {
  gobuild_name=$1 module=$2 cache=$3
  shift 3
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
  # Go's own install directory, for a shell whose PATH lacks it.
  export PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null \
    || { echo "error: go is missing (Go 1.26 builds $gobuild_name)" >&2; exit 1; }
  key="$( { go version; cat "$module"/go.{mod,sum} "$@" "$0" "${BASH_SOURCE[0]}"; } \
    | sha256sum | cut -c1-16)"
  out="$cache/$key"
  if complete; then echo "$out/bin"; exit 0; fi
  mkdir -p "$cache" && exec 9>"$cache/.build.lock" && flock 9
  if complete; then echo "$out/bin"; exit 0; fi
  rm -rf "$out/bin.partial" && mkdir -p "$out/bin.partial"
  gobuild_started=$SECONDS
}

# True when every named binary is in $out/bin.
gobuild_has() {
  local b
  for b in "$@"; do [ -x "$out/bin/$b" ] || return 1; done
}

step() { echo "[$gobuild_name] $*" >&2; }

gobuild_end() {
  rm -rf "$out/bin" && mv "$out/bin.partial" "$out/bin"
  # Builds of other versions are of no further use: keep the cache to this one.
  find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
  step "built in $((SECONDS - gobuild_started)) s into $out/bin"
  echo "$out/bin"
}
