"""The long-running processes and the cluster's set-up: ``crds install``, ``worker``,
``watcher`` and ``dev up``.

Only parsers are built here (argparse and the light settings module); each handler
imports Temporal, the Kubernetes client and structlog when it runs, so ``lockwright
--help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lockwright.commands.settings import add_arguments

# Imports inside functions: start-up time. Every command's parser is built on each run, so
# Temporal, the Kubernetes client, rich and the OCI code load only in the handler that runs.


def _crds_install(args: argparse.Namespace) -> int:
    """Handler of ``lockwright crds install``."""
    from lockwright.k8s.bootstrap import bootstrap_at
    from lockwright.log import configure
    from lockwright.managed.match import well_formed
    from lockwright.settings import SettingsError, from_args

    configure()
    try:
        settings = from_args(args)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for pattern in args.activation or ():
        if not well_formed(pattern):
            print(f"error: --activation {pattern!r} is not a valid pattern; use Go "
                  "filepath.Match patterns such as * or *.aws.upbound.io", file=sys.stderr)
            return 2
    try:
        activations = tuple(args.activation or settings.default_activations)
        report = bootstrap_at(settings.kubeconfig, settings.system_namespace, activations)
    except PermissionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"created {len(report.created)}, updated {len(report.updated)}, "
          f"unchanged {len(report.unchanged)}")
    return 0


def _worker(args: argparse.Namespace) -> int:
    from lockwright.worker.worker import worker_command

    return worker_command(args)


def _watcher(args: argparse.Namespace) -> int:
    from lockwright.worker.watcher import watcher_command

    return watcher_command(args)


def _dev_up(args: argparse.Namespace) -> int:
    from lockwright.worker.devstack import up_command

    return up_command(args)


def register(subparsers: Any) -> None:
    """Add ``crds``, ``worker``, ``watcher`` and ``dev`` to the top-level parser."""
    crds = subparsers.add_parser("crds", help="the CRDs lockwright serves")
    crds_sub = crds.add_subparsers(dest="crds_command", metavar="COMMAND", required=True)
    install = crds_sub.add_parser("install", help="apply the CRDs, the system namespace, the "
                                  "default DeploymentRuntimeConfig, the Lock and the default "
                                  "activation policy (idempotent)")
    add_arguments(install)
    install.add_argument("--activation", action="append", metavar="PATTERN", default=None,
                         help="an MRD name pattern of the `default` activation policy "
                         "(repeatable; Crossplane's --activation; default: "
                         "LOCKWRIGHT_DEFAULT_ACTIVATIONS, itself * by default)")
    install.set_defaults(func=_crds_install)

    worker = subparsers.add_parser("worker", help="run workflows and activities (Temporal)")
    add_arguments(worker)
    worker.add_argument("--no-bootstrap", action="store_true",
                        help="skip installing CRDs and system objects at start-up")
    worker.set_defaults(func=_worker)

    watcher = subparsers.add_parser("watcher", help="watch packages and signal their workflows")
    add_arguments(watcher)
    watcher.set_defaults(func=_watcher)

    dev = subparsers.add_parser("dev", help="the embedded development stack")
    dev_sub = dev.add_subparsers(dest="dev_command", metavar="COMMAND", required=True)
    up = dev_sub.add_parser("up", help="run Temporal, a registry, devcluster, worker and "
                            "watcher on loopback, and install the example Provider")
    up.add_argument("--state-dir", type=Path, default=Path(".lockwright/dev"),
                    help="where data, logs and the kubeconfig go (default .lockwright/dev)")
    up.add_argument("--example", action=argparse.BooleanOptionalAction, default=True,
                    help="build, push and install the example Provider (default on)")
    up.add_argument("--temporal-port", type=int, default=7233,
                    help="Temporal gRPC port; the UI listens on this + 1000 (default 7233)")
    up.add_argument("--registry-port", type=int, default=5000,
                    help="registry port; examples/provider.yaml names 5000 (default 5000)")
    up.add_argument("--timeout", type=float, default=120.0,
                    help="seconds to wait for each component and for Healthy (default 120)")
    up.add_argument("--control-plane", choices=("devcluster", "kube"), default="devcluster",
                    help="the Kubernetes API: devcluster (default, starts in a second) or "
                         "kube, the real kube-apiserver, controller manager, scheduler and "
                         "etcd with kwok's simulated kubelet, built from their Go modules on "
                         "first use (about 7 minutes on 2 cores)")
    up.add_argument("--temporal", choices=("dev", "cluster"), default="dev",
                    help="Temporal: dev, the CLI's dev server (default, SQLite, with the UI), "
                         "or cluster, PostgreSQL 15 and temporal-server's four services as "
                         "production runs them, built from the Go module on first use")
    up.add_argument("--exit-when-healthy", action="store_true",
                    help="stop everything and exit 0 once the example is Healthy (for CI)")
    up.set_defaults(func=_dev_up)
