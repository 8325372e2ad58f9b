"""The description of one served resource, shared by routing, discovery, OpenAPI and tables."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

ALL_VERBS: tuple[str, ...] = (
    "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
)


@dataclass(frozen=True)
class ResourceType:
    """One group/version/resource as the API server serves it.

    Built-in types come from ``devcluster.builtins``; custom types are made from a
    CustomResourceDefinition version (``crd_name`` is then set).
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    # additionalPrinterColumns entries exactly as a CRD spells them
    # ({name, type, jsonPath, description?, priority?, format?}).
    printer_columns: tuple[dict[str, Any], ...] = ()
    # openAPIV3Schema of a CRD version; None for built-ins (not validated).
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    storage: bool = True
    crd_name: str | None = None
    # The version a CRD stores its objects in, which every served version's discovery
    # entry names by its storageVersionHash ("": this one, when ``storage``).
    storage_version: str = ""

    @property
    def group_version(self) -> str:
        """``v1`` for the core group, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """``plural.group`` (or just ``plural`` in the core group), as error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def is_custom(self) -> bool:
        return self.crd_name is not None


def dump_json(value: Any) -> bytes:
    """Compact JSON, as ``json.dumps(value, separators=(",", ":"))`` writes it.

    orjson encodes a 50 KB CRD several times faster, and every write stores and answers
    with the whole object; what orjson refuses (an integer over 64 bits from a YAML body)
    goes through json.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


def clone(value: Any) -> Any:
    """Deep-copy JSON-shaped data (dicts, lists, scalars) several times faster than deepcopy."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value
