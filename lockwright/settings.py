"""Settings shared by the worker, the watcher, activities and ``lockwright crds install``.

Every setting is both a flag and an environment variable; a flag beats the environment,
which beats the default. :func:`commands.settings.add_arguments` adds the flags to a parser (their argparse
default is ``None`` so "not given" can be told apart), and :func:`from_args` resolves them.
Invalid values raise :class:`SettingsError` naming the flag, the variable and the fix.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from lockwright.managed.match import well_formed

RUNTIMES = ("Deployment", "External")
UPGRADE_GATES = ("Evidence", "Strict")  # lockwright.upgrade.gate.GATES
REVISION_NAMES = ("Generation", "Digest")  # lockwright.upgrade.revisions.NAMINGS
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
# REGISTRY/REPOSITORY[:TAG][@sha256:HEX]: a host with a dot or port, then a path.
_REFERENCE = re.compile(r"^[a-z0-9.-]+(\.[a-z0-9-]+|:\d{1,5})/[a-z0-9._/-]+(:[\w][\w.-]{0,127})?"
                        r"(@sha256:[0-9a-f]{64})?$")
_HOST_PORT = re.compile(r"^[^\s:/]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$")


class SettingsError(ValueError):
    """A setting has an invalid value; the message names the flag and how to fix it."""


def default_cache_dir() -> str:
    """The package cache directory used when none is configured (as ``lockwright xpkg``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "lockwright" / "xpkg")


@dataclass(frozen=True)
class Spec:
    """One setting: its field, flag, environment variable, default and help."""

    field: str
    flag: str
    env: str
    default: str
    help: str


#: The Crossplane release lockwright answers to ``spec.crossplane.version`` as, by default: a
#: current v2 release, so that packages asking for Crossplane v2 install.
CROSSPLANE_VERSION = "v2.3.0"
SPECS: tuple[Spec, ...] = (
    Spec("temporal_address", "--temporal-address", "LOCKWRIGHT_TEMPORAL_ADDRESS",
         "127.0.0.1:7233", "Temporal frontend HOST:PORT"),
    Spec("temporal_namespace", "--temporal-namespace", "LOCKWRIGHT_TEMPORAL_NAMESPACE",
         "default", "Temporal namespace"),
    Spec("task_queue", "--task-queue", "LOCKWRIGHT_TASK_QUEUE", "lockwright",
         "Temporal task queue of workflows and activities"),
    Spec("kubeconfig", "--kubeconfig", "KUBECONFIG", "",
         "kubeconfig file (default: the in-cluster service account in a Pod, "
         "else ~/.kube/config)"),
    Spec("system_namespace", "--system-namespace", "LOCKWRIGHT_SYSTEM_NAMESPACE",
         "crossplane-system", "namespace for runtimes, TLS and pull secrets"),
    Spec("cache_dir", "--cache-dir", "LOCKWRIGHT_CACHE_DIR", "",
         "package cache directory (default: ~/.cache/lockwright/xpkg)"),
    Spec("insecure_registries", "--insecure-registries", "LOCKWRIGHT_INSECURE_REGISTRIES", "",
         "comma-separated HOST:PORT registries reached over plain HTTP"),
    Spec("crossplane_version", "--crossplane-version", "LOCKWRIGHT_CROSSPLANE_VERSION",
         CROSSPLANE_VERSION, "Crossplane version reported for package constraint checks"),
    Spec("package_runtime", "--package-runtime", "LOCKWRIGHT_PACKAGE_RUNTIME", "Deployment",
         "runtime for Providers and Functions: Deployment or External"),
    Spec("resync_seconds", "--resync-seconds", "LOCKWRIGHT_RESYNC_SECONDS", "600",
         "watcher: relist and signal every package this often (0 = never)"),
    Spec("resync_rate", "--resync-rate", "LOCKWRIGHT_RESYNC_RATE", "10",
         "watcher: at most this many workflows a second signalled by a full list (start-up, "
         "resync), as Crossplane's --max-reconcile-rate; changes are never held (0 = no limit)"),
    Spec("max_concurrent_activities", "--max-concurrent-activities",
         "LOCKWRIGHT_MAX_CONCURRENT_ACTIVITIES", "32",
         "worker: activities run at once (threads for the Kubernetes client)"),
    Spec("tuning", "--tuning", "LOCKWRIGHT_TUNING", "",
         'watcher: JSON object overriding workflow timings, e.g. {"backoff_max_s": 2}'),
    Spec("temporal_tls", "--temporal-tls", "LOCKWRIGHT_TEMPORAL_TLS", "false",
         "connect to Temporal over TLS (implied by a client certificate or an API key)"),
    Spec("temporal_tls_cert", "--temporal-tls-cert", "LOCKWRIGHT_TEMPORAL_TLS_CERT", "",
         "PEM client certificate for Temporal mTLS (with --temporal-tls-key)"),
    Spec("temporal_tls_key", "--temporal-tls-key", "LOCKWRIGHT_TEMPORAL_TLS_KEY", "",
         "PEM private key of that certificate"),
    Spec("temporal_tls_ca", "--temporal-tls-ca", "LOCKWRIGHT_TEMPORAL_TLS_CA", "",
         "PEM CA bundle to trust for Temporal's server certificate (default: system roots)"),
    Spec("temporal_tls_server_name", "--temporal-tls-server-name",
         "LOCKWRIGHT_TEMPORAL_TLS_SERVER_NAME", "", "server name to check Temporal's "
         "certificate against (default: the address's host)"),
    Spec("temporal_api_key_file", "--temporal-api-key-file",
         "LOCKWRIGHT_TEMPORAL_API_KEY_FILE", "",
         "file holding a Temporal Cloud API key (read at connect; never logged or passed on)"),
    Spec("signature_verification", "--signature-verification",
         "LOCKWRIGHT_SIGNATURE_VERIFICATION", "true",
         "worker: verify the signatures ImageConfigs ask for; false installs such packages "
         "unverified, with a Warning Event and a message saying so"),
    Spec("dependency_upgrades", "--dependency-upgrades", "LOCKWRIGHT_DEPENDENCY_UPGRADES",
         "false", "worker: move an installed dependency up to the lowest version every "
         "dependent accepts (Crossplane's --enable-dependency-version-upgrades)"),
    Spec("dependency_downgrades", "--dependency-downgrades",
         "LOCKWRIGHT_DEPENDENCY_DOWNGRADES", "false",
         "worker: also move one down to the highest accepted version below it (implies "
         "upgrades; Crossplane's --enable-dependency-version-downgrades)"),
    Spec("managed_resource_definitions", "--managed-resource-definitions",
         "LOCKWRIGHT_MANAGED_RESOURCE_DEFINITIONS", "true",
         "worker: install a Provider's CRDs as ManagedResourceDefinitions, as Crossplane v2 "
         "does (false: plain CRDs, Crossplane v1's way)"),
    Spec("provider_deletion_protection", "--provider-deletion-protection",
         "LOCKWRIGHT_PROVIDER_DELETION_PROTECTION", "true",
         "worker and watcher: refuse to delete a Provider while managed resources of its "
         "types exist (a ClusterUsage per type, Crossplane's provider deletion protection); "
         "false deletes as before"),
    Spec("default_activations", "--default-activations", "LOCKWRIGHT_DEFAULT_ACTIVATIONS",
         "*", "comma-separated MRD name patterns of the `default` activation policy made at "
         "start (Crossplane's --activation; empty: no default policy)"),
    Spec("upgrade_gate", "--upgrade-gate", "LOCKWRIGHT_UPGRADE_GATE", "Evidence",
         "worker: what holds an Automatic upgrade with breaking schema changes: Evidence "
         "(only existing resources it would break, or a check that cannot be made) or "
         "Strict (any breaking change); the package annotation lockwright.dev/upgrade-gate "
         "overrides it"),
    Spec("revision_names", "--revision-names", "LOCKWRIGHT_REVISION_NAMES", "Generation",
         "worker: name a package's revisions by its digest and generation, a new revision "
         "on every spec change, as Crossplane's main branch does (Generation), or by the "
         "digest alone, as Crossplane v1.x to v2.4 did (Digest)"),
    Spec("package_indexes", "--package-indexes", "LOCKWRIGHT_PACKAGE_INDEXES", "",
         "comma-separated OCI references of the package indexes to search (lockwright "
         "search, install --api, the resolver), read through the ImageConfigs' rewrite, "
         "pull Secret and signature rules"),
    Spec("metrics_address", "--metrics-address", "LOCKWRIGHT_METRICS_ADDRESS", "",
         "worker: serve Prometheus metrics (Temporal SDK's and lockwright's) on HOST:PORT "
         "at /metrics (empty: off)"),
)
_BY_FIELD = {s.field: s for s in SPECS}
#: Settings whose variable, set but empty, means "none" rather than "the default".
_EMPTY_IS_A_VALUE = frozenset({"default_activations"})


@dataclass(frozen=True)
class Settings:
    """Resolved, validated settings of one lockwright process."""

    temporal_address: str = "127.0.0.1:7233"
    temporal_namespace: str = "default"
    task_queue: str = "lockwright"
    kubeconfig: str = ""
    system_namespace: str = "crossplane-system"
    cache_dir: str = ""
    insecure_registries: tuple[str, ...] = ()
    crossplane_version: str = CROSSPLANE_VERSION
    package_runtime: str = "Deployment"
    resync_seconds: float = 600.0
    resync_rate: float = 10.0
    max_concurrent_activities: int = 32
    tuning: str = ""
    dependency_upgrades: bool = False
    dependency_downgrades: bool = False
    signature_verification: bool = True
    upgrade_gate: str = "Evidence"
    temporal_tls: bool = False
    temporal_tls_cert: str = ""
    temporal_tls_key: str = ""
    temporal_tls_ca: str = ""
    temporal_tls_server_name: str = ""
    temporal_api_key_file: str = ""
    metrics_address: str = ""
    managed_resource_definitions: bool = True
    provider_deletion_protection: bool = True
    default_activations: tuple[str, ...] = ("*",)
    package_indexes: tuple[str, ...] = ()
    revision_names: str = "Generation"

    def __post_init__(self) -> None:
        if not self.cache_dir:
            object.__setattr__(self, "cache_dir", default_cache_dir())
        for check in _CHECKS:
            check(self)

    @property
    def activity_threads(self) -> int:
        """Threads (and Kubernetes connections) for the worker's activities: the SDK admits
        ``max_concurrent_activities`` activities and as many local activities at once, and
        runs both on one executor (docs/design.md, "One thread per admitted activity")."""
        return 2 * self.max_concurrent_activities

    def env(self) -> dict[str, str]:
        """These settings as environment variables, for child processes."""
        out = {}
        for spec in SPECS:
            value = getattr(self, spec.field)
            out[spec.env] = ",".join(value) if isinstance(value, tuple) else str(value)
        if not self.kubeconfig:
            del out["KUBECONFIG"]
        return out


def _fail(name: str, problem: str, fix: str) -> SettingsError:
    spec = _BY_FIELD[name]
    return SettingsError(f"{spec.flag} / {spec.env}: {problem}; {fix}")


def _check_address(s: Settings) -> None:
    if not _HOST_PORT.match(s.temporal_address):
        raise _fail("temporal_address", f"{s.temporal_address!r} is not HOST:PORT",
                    "give e.g. 127.0.0.1:7233")


def _check_metrics_address(s: Settings) -> None:
    if s.metrics_address and not _HOST_PORT.match(s.metrics_address):
        raise _fail("metrics_address", f"{s.metrics_address!r} is not HOST:PORT",
                    "give e.g. 0.0.0.0:9090, or nothing to serve no metrics")


def _check_names(s: Settings) -> None:
    if not s.temporal_namespace.strip():
        raise _fail("temporal_namespace", "empty", "give a namespace such as 'default'")
    if not s.task_queue.strip():
        raise _fail("task_queue", "empty", "give a task queue name such as 'lockwright'")
    if not _DNS_LABEL.match(s.system_namespace):
        raise _fail("system_namespace", f"{s.system_namespace!r} is not a DNS-1123 label",
                    "use lower-case letters, digits and '-', e.g. crossplane-system")


def _check_choices(s: Settings) -> None:
    if s.package_runtime not in RUNTIMES:
        raise _fail("package_runtime", f"{s.package_runtime!r} is not supported",
                    f"use one of {', '.join(RUNTIMES)}")
    if s.upgrade_gate not in UPGRADE_GATES:
        raise _fail("upgrade_gate", f"{s.upgrade_gate!r} is not an upgrade gate",
                    f"use one of {', '.join(UPGRADE_GATES)}")
    if s.revision_names not in REVISION_NAMES:
        raise _fail("revision_names", f"{s.revision_names!r} is not a naming",
                    f"use one of {', '.join(REVISION_NAMES)}")


def _check_values(s: Settings) -> None:
    if not _VERSION.match(s.crossplane_version):
        raise _fail("crossplane_version", f"{s.crossplane_version!r} is not a semantic version",
                    f"give e.g. {CROSSPLANE_VERSION}")
    for host in s.insecure_registries:
        if "/" in host or not host:
            raise _fail("insecure_registries", f"{host!r} is not HOST[:PORT]",
                        "list registry hosts like 127.0.0.1:5000, comma-separated")
    if s.resync_seconds < 0:
        raise _fail("resync_seconds", "negative", "give seconds >= 0 (0 turns resync off)")
    if s.resync_rate < 0:
        raise _fail("resync_rate", "negative", "give signals a second >= 0 (0 = no limit)")
    if s.max_concurrent_activities < 1:
        raise _fail("max_concurrent_activities", "below 1", "give a positive number")
    if s.tuning:
        _check_tuning(s.tuning)
    for pattern in s.default_activations:
        if not well_formed(pattern):
            raise _fail("default_activations", f"{pattern!r} is not a valid pattern",
                        "use Go filepath.Match patterns such as * or *.aws.upbound.io")
    for ref in s.package_indexes:
        if not _REFERENCE.match(ref):
            raise _fail("package_indexes", f"{ref!r} is not an OCI reference",
                        "list references like registry.example.org/team/index:v1, "
                        "comma-separated")
    if bool(s.temporal_tls_cert) != bool(s.temporal_tls_key):
        raise _fail("temporal_tls_cert", "a client certificate needs its key and a key its "
                    "certificate", "give both --temporal-tls-cert and --temporal-tls-key")


def _check_tuning(raw: str) -> None:
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
        raise _fail("tuning", f"{raw!r} is not a JSON object of numbers",
                    'give e.g. {"backoff_initial_s": 0.5, "backoff_max_s": 2}')


_CHECKS: tuple[Callable[[Settings], None], ...] = (_check_address, _check_names, _check_choices,
                                                   _check_values, _check_metrics_address)


def _convert(name: str, raw: str) -> Any:
    kind = {f.name: f.type for f in fields(Settings)}[name]
    try:
        if kind == "float":
            return float(raw)
        if kind == "int":
            return int(raw)
    except ValueError:
        raise _fail(name, f"{raw!r} is not a number", "give a number") from None
    if kind == "bool":
        return _boolean(name, raw)
    if kind == "tuple[str, ...]":
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    return raw.strip()


def _boolean(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in _BOOLEANS:
        raise _fail(name, f"{raw!r} is not true or false", "give true or false")
    return _BOOLEANS[text]


_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True,
             "false": False, "0": False, "no": False, "off": False, "": False}


def from_args(args: argparse.Namespace | None = None,
              environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve settings: the flag if given, else the environment variable, else the default.

    Args:
        args: parsed arguments from a parser set up with ``commands.settings.add_arguments``
            (or None).
        environ: the environment to read (default ``os.environ``).

    Returns:
        Validated settings.

    Raises:
        SettingsError: a value is invalid; the message names the flag and the fix.
    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for spec in SPECS:
        raw = getattr(args, spec.field, None) if args is not None else None
        if raw is None:
            raw = env.get(spec.env)
            if not raw and not (raw == "" and spec.field in _EMPTY_IS_A_VALUE):
                raw = spec.default
        values[spec.field] = _convert(spec.field, raw)
    return Settings(**values)
