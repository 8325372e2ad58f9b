"""Registry credentials and the auth challenge flows (anonymous, basic, bearer token).

Credentials come from a Docker ``config.json`` or the content of a
``kubernetes.io/dockerconfigjson`` secret (the same document under ``.dockerconfigjson``).
They are held in objects whose ``repr`` hides them; they are never logged and never put in
exception messages.

Not oras: ``oras.auth.TokenAuth`` answers only ``Bearer`` challenges (a ``Basic`` challenge
from an htpasswd registry sends it to fetch a "token" from the realm string), keeps one
token for every scope (a pull token is replayed for a push and loops on 401), and always
merges ``~/.docker/config.json`` in. We keep its Basic encoding helper and do the
challenge handling here: scheme-aware, one token per (host, scope), and a refusal to send
credentials to a plain-HTTP token realm of a registry reached over TLS.
"""

from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import oras.auth.utils
import requests

from lockwright.errors import RegistryUnavailable, Unauthorized

_PARAM = re.compile(r'([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')
_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io")


@dataclass(frozen=True)
class Credentials:
    """A username and password (or token) for one registry."""

    username: str
    password: str = field(repr=False)

    def basic(self) -> str:
        """The ``Authorization`` header value for HTTP Basic."""
        return "Basic " + str(oras.auth.utils.get_basic_auth(self.username, self.password))


@dataclass(frozen=True)
class Challenge:
    """A parsed ``WWW-Authenticate`` header."""

    scheme: str
    params: dict[str, str]


def parse_challenge(header: str) -> Challenge:
    """Parse ``Bearer realm="…",service="…",scope="…"`` (or ``Basic realm="…"``)."""
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3))
              for m in _PARAM.finditer(rest)}
    return Challenge(scheme.lower(), params)


def _entry_credentials(entry: dict[str, Any]) -> Credentials | None:
    if entry.get("username") and entry.get("password"):
        return Credentials(str(entry["username"]), str(entry["password"]))
    encoded = entry.get("auth")
    if not encoded:
        return None
    try:
        user, _, password = base64.b64decode(encoded).decode().partition(":")
    except ValueError:
        return None  # a malformed entry is ignored rather than echoed back in an error
    return Credentials(user, password)


def _host_of(key: str) -> str:
    key = re.sub(r"^[a-z]+://", "", key)
    return key.split("/", 1)[0]


class DockerAuths:
    """The ``auths`` of a Docker config: credentials by registry host."""

    def __init__(self, auths: dict[str, Credentials] | None = None) -> None:
        self._auths = dict(auths or {})

    def __repr__(self) -> str:
        return f"DockerAuths(hosts={sorted(self._auths)})"

    @classmethod
    def from_json(cls, text: str | bytes) -> DockerAuths:
        """Read a Docker ``config.json`` or a ``.dockerconfigjson`` secret value."""
        try:
            doc = json.loads(text)
        except ValueError:
            raise Unauthorized("registry auth config is not valid JSON") from None
        auths = doc.get("auths", doc) if isinstance(doc, dict) else {}
        found: dict[str, Credentials] = {}
        for key, entry in (auths or {}).items():
            creds = _entry_credentials(entry) if isinstance(entry, dict) else None
            if creds:
                found[_host_of(key)] = creds
        return cls(found)

    @classmethod
    def from_file(cls, path: str | Path) -> DockerAuths:
        """Read a Docker ``config.json`` file."""
        try:
            return cls.from_json(Path(path).read_bytes())
        except OSError as exc:
            raise Unauthorized(f"cannot read registry auth file {path}: "
                               f"{exc.strerror or type(exc).__name__}") from None

    @classmethod
    def from_environment(cls) -> DockerAuths:
        """``$DOCKER_CONFIG/config.json`` when ``DOCKER_CONFIG`` is set, else no credentials."""
        directory = os.environ.get("DOCKER_CONFIG")
        path = Path(directory) / "config.json" if directory else None
        return cls.from_file(path) if path and path.is_file() else cls()

    def for_host(self, host: str) -> Credentials | None:
        """Credentials for ``host`` (Docker Hub's several names are one)."""
        if host in self._auths:
            return self._auths[host]
        if host in ("docker.io", "registry-1.docker.io", "index.docker.io"):
            return next((self._auths[_host_of(k)] for k in _HUB_KEYS
                         if _host_of(k) in self._auths), None)
        return None


def scope_for(repository: str, push: bool) -> str:
    """The token scope for pulling from (or pushing to) ``repository``."""
    return f"repository:{repository}:{'pull,push' if push else 'pull'}"


def answer_challenge(session: requests.Session, challenge: Challenge, host: str,
                     scope: str, creds: Credentials | None, secure: bool,
                     timeout: float) -> str:
    """Return the ``Authorization`` header value that answers ``challenge``.

    Raises:
        Unauthorized: credentials are needed and missing, or the token service refused.
        RegistryUnavailable: the token service could not be reached or answered 5xx.
    """
    if challenge.scheme == "basic":
        if creds is None:
            raise Unauthorized(f"registry {host} requires credentials and none are configured")
        return creds.basic()
    if challenge.scheme != "bearer" or "realm" not in challenge.params:
        raise Unauthorized(f"registry {host} sent an unsupported auth challenge "
                           f"({challenge.scheme or 'empty'})")
    return "Bearer " + _fetch_token(session, challenge, host, scope, creds, secure, timeout)


def _fetch_token(session: requests.Session, challenge: Challenge, host: str, scope: str,
                 creds: Credentials | None, secure: bool, timeout: float) -> str:
    realm = challenge.params["realm"]
    if secure and not realm.startswith("https://"):
        raise Unauthorized(f"registry {host} named a token service that is not HTTPS")
    params = {"scope": challenge.params.get("scope", scope)}
    if "service" in challenge.params:
        params["service"] = challenge.params["service"]
    headers = {"Authorization": creds.basic()} if creds else {}
    try:
        resp = session.get(realm, params=params, headers=headers, timeout=timeout)
    except requests.RequestException as exc:
        raise RegistryUnavailable(f"token service of {host} unreachable: "
                                  f"{type(exc).__name__}") from None
    if resp.status_code >= 500 or resp.status_code == 429:
        raise RegistryUnavailable(f"token service of {host} answered {resp.status_code}")
    token = _token_from(resp)
    if token is None:
        raise Unauthorized(f"token service of {host} refused "
                           f"{'the credentials' if creds else 'anonymous access'} "
                           f"({resp.status_code})")
    return token


def _token_from(resp: requests.Response) -> str | None:
    if resp.status_code != 200:
        return None
    try:
        body = resp.json()
    except ValueError:
        return None
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    return str(token) if token else None
