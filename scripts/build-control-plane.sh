#!/usr/bin/env bash
# Builds the real Kubernetes control plane lockwright's tests and `dev up --control-plane
# kube` run: kube-apiserver, kube-controller-manager and kube-scheduler (k8s.io/kubernetes;
# not kubectl: the tests and users run their own, and it added 195 packages of 2,618 and a
# link), etcd (go.etcd.io/etcd/server/v3) and kwok (sigs.k8s.io/kwok), each
# from the Go module proxy through a module of ours under lockwright/controlplane/modules/ whose go.mod and
# go.sum pin every version. Binaries go to a directory keyed by those files and the Go
# version, so a second run finds them and takes a second; the path is the last line printed.
#   LOCKWRIGHT_CONTROL_PLANE_CACHE  where keyed directories live (~/.cache/lockwright/control-plane)
# A cold build on 2 cores takes about 7 minutes, 1.1 GB of modules and 3.7 GB of build cache.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
modules="$root/lockwright/controlplane/modules"
. "$root/scripts/lib/gobuild.sh"
complete() { gobuild_has kube-apiserver kube-controller-manager kube-scheduler etcd kwok; }
gobuild_begin "control plane" "$modules/kubernetes" \
  "${LOCKWRIGHT_CONTROL_PLANE_CACHE:-$HOME/.cache/lockwright/control-plane}" \
  "$modules"/{etcd,kwok}/go.{mod,sum}

# The version kube-apiserver reports on /version (upstream's hack/lib/version.sh sets it).
version="$(cd "$modules/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
minor="$(echo "$version" | cut -d. -f2)"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
step "building the control plane once into $out (about 7 minutes on 2 cores the first time)"
step "building Kubernetes $version (kube-apiserver, kube-controller-manager, kube-scheduler)"
(cd "$modules/kubernetes" && go build -trimpath -ldflags "$ldflags" -o "$out/bin.partial/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler)
step "building etcd"
(cd "$modules/etcd" && go build -trimpath -ldflags "-s -w" -o "$out/bin.partial/etcd" go.etcd.io/etcd/server/v3)
step "building kwok"
(cd "$modules/kwok" && go build -trimpath -ldflags "-s -w" -o "$out/bin.partial/kwok" sigs.k8s.io/kwok/cmd/kwok)
# kwok's Stage configurations, from the module it was built from.
stages="$(cd "$modules/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
mkdir -p "$out/stages" && cp "$stages"/node/fast/node-initialize.yaml \
  "$stages"/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  "$stages"/pod/fast/pod-ready.yaml "$stages"/pod/fast/pod-complete.yaml \
  "$stages"/pod/fast/pod-delete.yaml "$out/stages/"
chmod -R u+w "$out/stages"
gobuild_end
