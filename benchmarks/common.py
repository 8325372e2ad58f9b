"""What the benchmark scripts share: the work dir, quiet logs, a Provider's metadata."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# A Provider's crossplane.yaml; ``provider_meta`` fills it in.
META = """apiVersion: meta.pkg.crossplane.io/v1
kind: Provider
metadata:
  name: {name}
spec:
  crossplane:
    version: ">=v1.14.0-0"
  controller:
    image: xpkg.lockwright.example.org/bench/{name}-controller:{tag}
"""


def provider_meta(name: str, tag: str = "v1.0.0") -> str:
    """``crossplane.yaml`` of the Provider ``name``, its controller image tagged ``tag``."""
    return META.format(name=name, tag=tag)


@contextmanager
def workdir(keep: str | None, name: str) -> Iterator[Path]:
    """``keep`` (made if missing, left behind), else a fresh temp dir removed afterwards."""
    work = Path(keep or tempfile.mkdtemp(prefix=f"lockwright-bench-{name}-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        yield work
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def quiet_logs(urllib3: bool = False) -> None:
    """Log warnings and worse only; with ``urllib3``, not its connection-pool warnings."""
    from lockwright.log import configure

    configure(level="warning")
    if urllib3:
        # A concurrent run opens more connections than urllib3 keeps; that is fine.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


def run_title(name: str, quick: bool, tuning: dict[str, float], sizes: str) -> str:
    """The heading of a stack benchmark's table: which run, the tuning, ``sizes``."""
    return (f"lockwright {name} benchmark ({'quick' if quick else 'full'} run; "
            f"LOCKWRIGHT_TUNING={json.dumps(tuning)}, other Tuning at production defaults; "
            f"{sizes})")


def big_provider_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a benchmark of one big Provider on a control plane of its own:
    ``--crds``, ``--mb``, ``--health-poll``, ``--control-plane`` (kube by default), ``--keep``."""
    parser.add_argument("--crds", type=int, default=2000)
    parser.add_argument("--mb", type=float, default=100.0,
                        help="package.yaml size, MB (about)")
    parser.add_argument("--health-poll", type=float, default=0.2,
                        help="Tuning.health_poll_s given to the workflows")
    parser.add_argument("--control-plane", choices=("devcluster", "kube"), default="kube")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
