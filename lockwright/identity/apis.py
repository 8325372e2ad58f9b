"""An API as users name it, and the types a definition serves.

Users name an API as ``plural.group/version`` (``buckets.s3.aws.example.org/v1beta1``), as
kubectl's ``resource.group``, or by its kind, ``Kind.group/version``
(``Bucket.s3.aws.example.org/v1beta1``): a name whose first letter is upper case is a kind.
The version may be left out (``buckets.s3.aws.example.org``): any served version matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lockwright.errors import InvalidReference

Obj = dict[str, Any]

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NAME = re.compile(rf"^(?P<name>[A-Za-z0-9]+)\.(?P<group>{_DNS_LABEL}(\.{_DNS_LABEL})+)"
                   r"(/(?P<version>[a-z0-9]+))?$")
EXAMPLE = "buckets.s3.example.org/v1beta1 (plural.group/version) or Bucket.s3.example.org/v1beta1"


@dataclass(frozen=True)
class ApiRef:
    """``name.group/version``; ``name`` is a plural or, capitalised, a kind."""

    name: str
    group: str
    version: str = ""

    @property
    def is_kind(self) -> bool:
        """Whether ``name`` is a kind (``Bucket``) rather than a plural (``buckets``)."""
        return self.name[:1].isupper()

    def __str__(self) -> str:
        return f"{self.name}.{self.group}" + (f"/{self.version}" if self.version else "")


def parse(text: str) -> ApiRef:
    """Read ``text`` as an API.

    Raises:
        InvalidReference: naming the text and the forms an API takes.
    """
    found = _NAME.match(text.strip())
    if found is None:
        raise InvalidReference(f"{text!r} is not an API: write it as {EXAMPLE}")
    return ApiRef(found["name"], found["group"], found["version"] or "")


@dataclass(frozen=True)
class ServedType:
    """One type a definition serves: what an index lists and ``lockwright api`` prints."""

    group: str
    kind: str
    plural: str
    versions: tuple[str, ...] = ()
    #: The definition's type digest (``lockwright.identity.digest.type_digest``).
    digest: str = ""
    #: The definition's kind: CustomResourceDefinition, CompositeResourceDefinition, ...
    definition: str = "CustomResourceDefinition"

    @property
    def name(self) -> str:
        """``plural.group``, the CRD's name."""
        return f"{self.plural}.{self.group}"

    def serves(self, api: ApiRef) -> bool:
        """Whether this type is ``api`` (case-sensitive kind, lower-case plural)."""
        named = self.kind == api.name if api.is_kind else self.plural == api.name.lower()
        return (named and self.group == api.group
                and (not api.version or api.version in self.versions))

    def to_json(self) -> Obj:
        """The index's form of the type."""
        return {"group": self.group, "kind": self.kind, "plural": self.plural,
                "versions": list(self.versions), "digest": self.digest,
                "definition": self.definition}

    @classmethod
    def from_json(cls, data: Obj) -> ServedType:
        """Read the index's form; missing fields are empty."""
        return cls(group=str(data.get("group", "")), kind=str(data.get("kind", "")),
                   plural=str(data.get("plural", "")),
                   versions=tuple(str(v) for v in data.get("versions") or ()),
                   digest=str(data.get("digest", "")),
                   definition=str(data.get("definition", "CustomResourceDefinition")))


def served_types(definition: Obj, digest: str = "") -> list[ServedType]:
    """The types a CRD, MRD or XRD serves (its served versions); none for other kinds."""
    kind = definition.get("kind")
    if kind not in ("CustomResourceDefinition", "ManagedResourceDefinition",
                    "CompositeResourceDefinition"):
        return []
    spec = definition.get("spec") or {}
    names = spec.get("names") or {}
    versions = tuple(str(v.get("name", "")) for v in spec.get("versions") or []
                     if v.get("served", True))
    return [ServedType(group=str(spec.get("group", "")), kind=str(names.get("kind", "")),
                       plural=str(names.get("plural", "")), versions=versions, digest=digest,
                       definition=str(kind))]


