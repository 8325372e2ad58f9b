"""``lockwright devcluster serve``: run devcluster and write a kubeconfig that points at it."""

from __future__ import annotations

import argparse
import base64
import os
import signal
import sys
import threading
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``devcluster`` command group."""
    parser = subparsers.add_parser("devcluster", help="Kubernetes-API-compatible dev server")
    sub = parser.add_subparsers(dest="devcluster_command", metavar="COMMAND", required=True)
    serve = sub.add_parser("serve", help="serve the Kubernetes API on a loopback port")
    serve.add_argument("--listen", default="127.0.0.1:0",
                       help="HOST:PORT to listen on; port 0 picks a free port")
    serve.add_argument("--data-dir", required=True, help="directory holding the persistent state")
    serve.add_argument("--kubeconfig", required=True,
                       help="file to write a kubeconfig for this server to")
    serve.add_argument("--watch-history", type=int, default=10_000,
                       help="events retained for watches; older versions get 410 Gone")
    serve.add_argument("--bookmark-interval", type=float, default=None,
                       help="seconds between BOOKMARK events on watches that allow them "
                       "(default 60, about kube-apiserver's)")
    serve.add_argument("--deployment-delay", type=float, default=0.05,
                       help="seconds before a Deployment's simulated status appears")
    serve.add_argument("--unavailable-images", action="append", default=[], metavar="PATTERN",
                       help="keep Deployments with a container or init-container image "
                            "matching this fnmatch pattern unavailable (repeatable)")
    serve.add_argument("--authorization-mode", choices=("AlwaysAllow", "RBAC"),
                       default="AlwaysAllow",
                       help="RBAC: authenticate bearer tokens (the kubeconfig written gets "
                            "the admin's; ServiceAccounts get theirs from TokenRequest, as "
                            "`kubectl create token` asks) and authorize every request by the "
                            "stored Roles, ClusterRoles and bindings; GET /debug/rbac shows "
                            "which rule allowed what")
    serve.add_argument("--enable-garbage-collector", choices=("true", "false"), default="true",
                       help="false: no ownerReference garbage collection (an object whose "
                            "owners are gone stays; foreground and orphan deletions wait), "
                            "as kube-controller-manager's flag of that name; namespace and "
                            "CRD clean-up still run")
    serve.add_argument("--record-shapes", metavar="FILE",
                       default=os.environ.get("LOCKWRIGHT_DEVCLUSTER_SHAPES") or None,
                       help="append the shape of each request served (method, path template, "
                            "query names, content types, body kind; no values) to FILE, one "
                            "JSON line per new shape (env LOCKWRIGHT_DEVCLUSTER_SHAPES)")
    serve.set_defaults(func=serve_command)


def kubeconfig(url: str, token: str | None = None, ca_pem: bytes | None = None) -> str:
    """A kubeconfig for ``url`` with one context, ``devcluster``, namespace ``default``.

    Args:
        token: a bearer token for the user (RBAC mode); none when every request is allowed.
        ca_pem: the CA of an HTTPS server (RBAC mode).
    """
    user = f"\n    token: {token}" if token else " {}"
    ca = (f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n"
          if ca_pem else "")
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: devcluster\n  cluster:\n    server: {url}\n{ca}"
        f"users:\n- name: devcluster\n  user:{user}\n"
        "contexts:\n- name: devcluster\n  context:\n    cluster: devcluster\n"
        "    user: devcluster\n    namespace: default\n"
        "current-context: devcluster\n"
    )


def serve_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM."""
    from lockwright.devcluster.app import start
    from lockwright.devcluster.watch import BOOKMARK_INTERVAL_S

    host, _, port = args.listen.rpartition(":")
    bookmarks = BOOKMARK_INTERVAL_S if args.bookmark_interval is None else args.bookmark_interval
    app = start(host or "127.0.0.1", int(port or 0), args.data_dir,
                history=args.watch_history, bookmark_interval=bookmarks,
                deployment_delay=args.deployment_delay,
                unavailable_images=args.unavailable_images,
                authorization=args.authorization_mode,
                owner_gc=args.enable_garbage_collector == "true",
                record_shapes=args.record_shapes)
    tmp = f"{args.kubeconfig}.tmp"
    token = app.admin_token
    mode = 0o600 if token else 0o644  # a kubeconfig holding a credential is the owner's
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w",
              encoding="utf-8") as fh:
        fh.write(kubeconfig(app.url, token, app.ca_pem))
    os.replace(tmp, args.kubeconfig)
    print(f"devcluster serving {app.url} (kubeconfig {args.kubeconfig})", file=sys.stderr,
          flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    app.stop()
    return 0
