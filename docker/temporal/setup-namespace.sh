#!/bin/sh
# Once the server answers: creates the namespace and registers lockwright's search
# attributes (SEARCH_ATTRIBUTES="Name=Type ...", from docker-compose.yml, which a test
# checks against lockwright/contracts/names.py). Runs in temporalio/admin-tools. Done here, before
# any worker or watcher starts, so the first workflow start already finds them and scaled
# workers do not race to add them (the worker's own registration then finds nothing missing).
# Idempotent: it runs on every `docker compose up`.
set -eu
: "${TEMPORAL_ADDRESS:?}" "${NAMESPACE:?}" "${SEARCH_ATTRIBUTES:?}"

# Runs "$@" until it succeeds, at most 60 times 2 s apart: the server takes a while to
# answer after its port opens, and a new namespace a few seconds to reach every cache.
retry() {
  tries=60
  until "$@"; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || { echo "gave up: $*" >&2; return 1; }
    sleep 2
  done
}

t() { temporal "$@" --address "$TEMPORAL_ADDRESS"; }
list() { t operator search-attribute list --namespace "$NAMESPACE" > "$listing"; }

listing=$(mktemp)
retry t operator cluster health > /dev/null
if ! t operator namespace describe --namespace "$NAMESPACE" > /dev/null 2>&1; then
  t operator namespace create --namespace "$NAMESPACE"
fi
retry list
for pair in $SEARCH_ATTRIBUTES; do
  name=${pair%%=*}
  if grep -qw "$name" "$listing"; then
    echo "search attribute $name already registered"
  else
    retry t operator search-attribute create --namespace "$NAMESPACE" \
      --name "$name" --type "${pair#*=}"
  fi
done
rm -f "$listing"
echo "namespace $NAMESPACE ready"
