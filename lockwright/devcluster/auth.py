"""Bearer-token authentication: ServiceAccount tokens and the admin's token.

Tokens are JWTs signed with HMAC-SHA256 under a key kept in the data directory, so they
survive restarts as kube's signed ServiceAccount tokens do. A ServiceAccount token is
issued through the TokenRequest subresource (``POST .../serviceaccounts/<name>/token``,
what ``kubectl create token`` calls) and authenticates as
``system:serviceaccount:<namespace>:<name>`` while it has not expired and the
ServiceAccount still exists with the UID it was issued for. The admin token (written into
the kubeconfig devcluster writes) authenticates a member of ``system:masters``. A request
without a token is ``system:anonymous``; a token that does not verify answers 401.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lockwright.devcluster.errors import ApiError
from lockwright.devcluster.rbac import AUTHENTICATED, MASTERS, UNAUTHENTICATED, User, service_account_user

Obj = dict[str, Any]
ISSUER = "https://devcluster.lockwright.dev"
DEFAULT_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]
KEY_FILE = "token-signing.key"
ADMIN = User("devcluster-admin", (MASTERS, AUTHENTICATED))
ANONYMOUS = User("system:anonymous", (UNAUTHENTICATED,))
DEFAULT_EXPIRATION_S = 3600
MIN_EXPIRATION_S = 600
_CACHE_LIMIT = 4096
# (namespace, name) -> the ServiceAccount's UID, or None when it does not exist.
AccountLookup = Callable[[str, str], "str | None"]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def unauthorized() -> ApiError:
    """kube-apiserver's 401 for a credential it cannot verify."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def _load_key(data_dir: str) -> bytes:
    """The signing key, created (owner-readable only) on first use."""
    path = os.path.join(data_dir, KEY_FILE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with open(path, "rb") as fh:
            return fh.read()
    key = os.urandom(32)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key


class TokenAuthority:
    """Issues and verifies devcluster's bearer tokens."""

    def __init__(self, data_dir: str) -> None:
        self._key = _load_key(data_dir)
        self._verified: dict[str, Obj] = {}

    def sign(self, claims: Obj) -> str:
        """A compact JWT (HS256) carrying ``claims``."""
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        mac = hmac.new(self._key, f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(mac)}"

    def claims(self, token: str) -> Obj | None:
        """The claims of a token this authority signed and that has not expired, else None."""
        found = self._verified.get(token)
        if found is None:
            found = self._verify(token)
            if found is None:
                return None
            if len(self._verified) >= _CACHE_LIMIT:
                self._verified.clear()
            self._verified[token] = found
        exp = found.get("exp")
        return None if exp is not None and time.time() >= exp else found

    def _verify(self, token: str) -> Obj | None:
        head, _, rest = token.partition(".")
        body, _, mac = rest.partition(".")
        want = hmac.new(self._key, f"{head}.{body}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(mac), want):
                return None
            claims = json.loads(_unb64(body))
        except ValueError:
            return None
        return claims if isinstance(claims, dict) else None

    def admin_token(self) -> str:
        """The token of devcluster's administrator (``system:masters``)."""
        return self.sign({"iss": ISSUER, "sub": ADMIN.name, "admin": True})

    def issue(self, namespace: str, name: str, uid: str, seconds: int,
              audiences: list[str]) -> tuple[str, int]:
        """A token for ServiceAccount ``namespace/name`` valid ``seconds``; and its expiry."""
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": f"system:serviceaccount:{namespace}:{name}",
                  "aud": audiences, "iat": now, "nbf": now, "exp": now + seconds,
                  "kubernetes.io": {"namespace": namespace,
                                    "serviceaccount": {"name": name, "uid": uid}}}
        return self.sign(claims), now + seconds

    def authenticate(self, header: str | None, lookup: AccountLookup) -> User:
        """Who the ``Authorization`` header says the caller is.

        Raises:
            ApiError: 401 for a bearer token that does not verify, has expired or names a
                ServiceAccount that is gone (or was re-created since).
        """
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return ANONYMOUS
        claims = self.claims(token.strip())
        if claims is None:
            raise unauthorized()
        if claims.get("admin") is True:
            return ADMIN
        return _account_user(claims, lookup)


def _account_user(claims: Obj, lookup: AccountLookup) -> User:
    info = claims.get("kubernetes.io") or {}
    namespace = str(info.get("namespace", ""))
    account = info.get("serviceaccount") or {}
    name, uid = str(account.get("name", "")), str(account.get("uid", ""))
    if not namespace or not name or lookup(namespace, name) != uid:
        raise unauthorized()
    return service_account_user(namespace, name, uid)


def _rfc3339(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _too_short(name: str, seconds: int) -> ApiError:
    cause = f"Invalid value: {seconds}: may not specify a duration less than 10 minutes"
    return ApiError(422, "Invalid", f'TokenRequest.authentication.k8s.io "{name}" is invalid: '
                    f"spec.expirationSeconds: {cause}",
                    {"name": name, "group": "authentication.k8s.io", "kind": "TokenRequest",
                     "causes": [{"reason": "FieldValueInvalid",
                                 "field": "spec.expirationSeconds", "message": cause}]})


def token_request(authority: TokenAuthority, account: Obj, body: Obj) -> Obj:
    """Answer a TokenRequest for the ServiceAccount ``account`` (its stored object)."""
    meta = account["metadata"]
    spec = dict(body.get("spec") or {})
    seconds = int(spec.get("expirationSeconds") or DEFAULT_EXPIRATION_S)
    if seconds < MIN_EXPIRATION_S:
        raise _too_short(meta["name"], seconds)
    audiences = list(spec.get("audiences") or DEFAULT_AUDIENCES)
    token, expiry = authority.issue(meta["namespace"], meta["name"], meta["uid"], seconds,
                                    audiences)
    spec.update(audiences=audiences, expirationSeconds=seconds)
    spec.setdefault("boundObjectRef", None)
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                         "creationTimestamp": None},
            "spec": spec, "status": {"token": token, "expirationTimestamp": _rfc3339(expiry)}}
