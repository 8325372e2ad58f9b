"""What ImageConfigs and packages read from Secrets: pull credentials and verification keys.

Shared by the package installer (``activities``) and the package index reader
(:mod:`lockwright.index.read`), so both authenticate and verify the same way. A Secret is
read through a :data:`SecretReader` (the system namespace's Secrets by name), inside the
call that needs it; its content goes straight into a registry client or a key and never
into a message (docs/design.md invariant 2).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable
from typing import Any

from lockwright.errors import Unauthorized
from lockwright.images import verification
from lockwright.images.cosign import (
    Attestation,
    KeyAuthority,
    SignatureError,
    Verified,
    verify_image,
)
from lockwright.oci.auth import DockerAuths
from lockwright.oci.client import RegistryClient
from lockwright.oci.reference import Reference

Obj = dict[str, Any]
#: A Secret of the system namespace by name, or None when there is none.
SecretReader = Callable[[str], Obj | None]
DOCKER_CONFIG_KEY = ".dockerconfigjson"


def registry_client(secret: SecretReader, namespace: str, pull_secrets: Iterable[str],
                    insecure: Iterable[str]) -> RegistryClient:
    """A registry client holding the credentials of ``pull_secrets``.

    Raises:
        Unauthorized: a Secret does not hold a valid ``.dockerconfigjson`` (named, never
            quoted).
    """
    merged: dict[str, Any] = {}
    for name in dict.fromkeys(pull_secrets):
        raw = ((secret(name) or {}).get("data") or {}).get(DOCKER_CONFIG_KEY)
        if not raw:
            continue
        try:
            doc = json.loads(base64.b64decode(raw))
        except ValueError:
            raise Unauthorized(f"pull secret {namespace}/{name} does not hold a "
                               "valid .dockerconfigjson") from None
        merged.update(doc.get("auths", doc) if isinstance(doc, dict) else {})
    auths = DockerAuths.from_json(json.dumps({"auths": merged}))
    return RegistryClient(insecure=insecure, auths=auths)


def read_keys(plan: verification.Policy, secret: SecretReader, namespace: str
              ) -> tuple[dict[str, bytes], dict[str, str]]:
    """Each key authority's public key from its Secret, or why it cannot be read."""
    keys: dict[str, bytes] = {}
    reasons: dict[str, str] = {}
    for auth in plan.authorities:
        if auth.problem:
            continue
        found = secret(auth.secret)
        raw = ((found or {}).get("data") or {}).get(auth.key)
        where = f"key {auth.key!r} of Secret {namespace}/{auth.secret}"
        if found is None:
            reasons[auth.name] = f"cannot read {where}: the Secret does not exist"
        elif not raw:
            reasons[auth.name] = f"cannot read {where}: no such key, or it is empty"
        else:
            keys[auth.name] = _decoded(raw, reasons, auth.name, where)
    return {k: v for k, v in keys.items() if v}, reasons


def first_passing(plan: verification.Policy, keys: dict[str, bytes], reasons: dict[str, str],
                  client: RegistryClient, repository: Reference, digest: str
                  ) -> Verified | None:
    """The first authority, in order, whose key verifies; each other one's reason noted."""
    for auth in plan.authorities:
        if reasons.get(auth.name) or auth.problem:
            continue
        try:
            return verify_image(client, repository, digest, [_key_authority(auth, keys)])
        except SignatureError as err:
            reasons[auth.name] = err.message.removeprefix(f'authority "{auth.name}": ')
    return None


def verified(plan: verification.Policy, secret: SecretReader, namespace: str,
             client: RegistryClient, repository: Reference, digest: str) -> Verified:
    """Verify ``repository@digest`` as ``plan`` asks, failing closed.

    Raises:
        VerificationFailed: no authority passed; every authority's reason, in order.
    """
    keys, reasons = read_keys(plan, secret, namespace)
    done = first_passing(plan, keys, reasons, client, repository, digest)
    if done is None:
        raise verification.failed([(a.name, reasons.get(a.name) or a.problem)
                                   for a in plan.authorities])
    return done


def _key_authority(auth: verification.Authority, keys: dict[str, bytes]) -> KeyAuthority:
    return KeyAuthority(auth.name, keys[auth.name], auth.hash_algorithm,
                        tuple(Attestation(name, predicate) for name, predicate in auth.attestations))


def _decoded(raw: str, reasons: dict[str, str], name: str, where: str) -> bytes:
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        reasons[name] = f"cannot read {where}: not base64"
        return b""
