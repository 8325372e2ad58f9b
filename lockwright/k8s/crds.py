"""The CRDs lockwright serves: Crossplane's ``pkg.crossplane.io`` package API.

The YAML files are package data in ``lockwright/data/crds/`` so an installed
distribution finds them; the repository's top-level ``crds/`` is a symlink to that
directory, which is where the design's layout puts them.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

CRD_PACKAGE = "lockwright.data.crds"


def crd_files() -> list[str]:
    """Names of the packaged CRD YAML files, sorted."""
    return sorted(f.name for f in resources.files(CRD_PACKAGE).iterdir()
                  if f.name.endswith(".yaml"))


def load_crds() -> list[dict[str, Any]]:
    """Read every packaged CRD, in file-name order.

    Returns:
        One ``apiextensions.k8s.io/v1`` CustomResourceDefinition dict per file.
    """
    root = resources.files(CRD_PACKAGE)
    out: list[dict[str, Any]] = []
    for name in crd_files():
        docs = yaml.safe_load_all(root.joinpath(name).read_text(encoding="utf-8"))
        out.extend(d for d in docs if d)
    return out
