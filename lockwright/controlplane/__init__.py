"""The real Kubernetes control plane on loopback, for tests and ``dev up --control-plane kube``.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (a simulated
kubelet), built from their Go modules by ``scripts/build-control-plane.sh`` (the Go modules
pinning them live beside this file) and started on free loopback ports, as
controller-runtime's envtest starts its apiserver, with the controllers and a Node so that
Deployments roll out and the garbage collector is Kubernetes' own.
"""
