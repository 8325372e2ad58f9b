"""The package cache: ``package.yaml`` files on local disk, keyed by manifest digest.

Layout: ``<dir>/<sha256 hex>/package.yaml``, its decoded documents as JSON lines
(``documents.jsonl``, see :mod:`lockwright.xpkg.documents`) and ``meta.json`` (size and
sha256 of both files, source, base layer digest). An entry is built in ``<dir>/.tmp`` and
renamed into place, so readers see a whole entry or none. Reading re-hashes both files; an
entry that does not match, or has no ``documents.jsonl`` (written by an older version), is
deleted and reported as a miss, so the caller fetches again.
The cache is bounded: after each insert, least recently used entries (by ``meta.json``
mtime, touched on every hit) are evicted until the total fits. Aliases
(``<dir>/.refs/<sha256 of ref>``) map a reference to a digest for ``packagePullPolicy:
Never``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

import structlog

from lockwright.errors import LockwrightError
from lockwright.oci.reference import is_digest

log = structlog.get_logger(__name__)

DEFAULT_MAX_BYTES = 4 * 1024 * 1024 * 1024
PACKAGE_FILE = "package.yaml"
DOCUMENTS_FILE = "documents.jsonl"
META_FILE = "meta.json"


class CacheDirUnusable(LockwrightError):
    """The package cache directory cannot be created or written (a read-only root, no
    writable home); the message names the directory and how to give one."""


def unusable_message(root: Path, exc: OSError) -> str:
    """What to say when ``root`` cannot hold the package cache, and how to fix it."""
    return (f"the package cache directory {root} cannot be created or written "
            f"({exc.strerror or exc}): set LOCKWRIGHT_CACHE_DIR (or --cache-dir) to a "
            "writable directory; in a container with a read-only root filesystem, mount a "
            "volume or a tmpfs there (deploy/worker.yaml mounts an emptyDir at "
            "/var/cache/lockwright)")


@dataclass(frozen=True)
class CacheEntry:
    """One cached package: where its package.yaml is and what it is."""

    digest: str
    path: Path
    size: int
    sha256: str
    source: str = ""
    base_layer: str = ""
    documents_size: int = 0
    documents_sha256: str = ""

    @property
    def documents(self) -> Path:
        """The package's decoded documents, one JSON line each (beside package.yaml)."""
        return self.path.with_name(DOCUMENTS_FILE)


def _hash_file(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1024 * 1024):
            hasher.update(chunk)
    return hasher.hexdigest()


def _intact(entry: CacheEntry) -> bool:
    # No recorded documents hash: an entry from before documents.jsonl, so a miss.
    return (bool(entry.documents_sha256) and _hash_file(entry.path) == entry.sha256
            and _hash_file(entry.documents) == entry.documents_sha256)


class PackageCache:
    """A content-addressed, size-bounded, LRU-evicted directory of packages.

    Args:
        root: the cache directory (created if missing).
        max_bytes: bound on the total size of cached package.yaml and documents files.

    Raises:
        CacheDirUnusable: ``root`` cannot be created or written.
    """

    def __init__(self, root: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        try:
            for sub in (".tmp", ".refs", ".verified"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            # An existing directory may still be read-only (a read-only mount).
            with tempfile.TemporaryFile(dir=self.root / ".tmp"):
                pass
        except OSError as exc:
            raise CacheDirUnusable(unusable_message(self.root, exc)) from exc

    def _dir(self, digest: str) -> Path:
        if not is_digest(digest):
            raise ValueError(f"not a sha256 digest: {digest[:80]!r}")
        return self.root / digest.removeprefix("sha256:")

    @contextlib.contextmanager
    def temp_file(self, suffix: str = "") -> Iterator[tuple[Path, IO[bytes]]]:
        """A scratch file inside the cache's filesystem, removed on exit."""
        fd, name = tempfile.mkstemp(dir=self.root / ".tmp", suffix=suffix)
        path = Path(name)
        try:
            with os.fdopen(fd, "w+b") as f:
                yield path, f
        finally:
            path.unlink(missing_ok=True)

    def get(self, digest: str) -> CacheEntry | None:
        """The entry for ``digest`` if present and intact; a corrupt one is removed."""
        directory = self._dir(digest)
        try:
            meta = json.loads((directory / META_FILE).read_text())
            entry = CacheEntry(**{**meta, "path": directory / PACKAGE_FILE})
            intact = _intact(entry)
        except (OSError, ValueError, TypeError):
            intact, entry = False, None
        if not intact or entry is None:
            if directory.exists():
                log.warning("cache.corrupt_entry", digest=digest)
                shutil.rmtree(directory, ignore_errors=True)
            return None
        os.utime(directory / META_FILE)
        return entry

    def base_layer(self, digest: str) -> str | None:
        """The base layer recorded for ``digest`` ("" when none was marked), read without
        re-hashing the entry (:meth:`get` does); None when there is no entry."""
        try:
            meta = json.loads((self._dir(digest) / META_FILE).read_text())
        except (OSError, ValueError):
            return None
        return str(meta.get("base_layer") or "") if isinstance(meta, dict) else None

    def put(self, digest: str, package_yaml: Path, sha256: str, source: str = "",
            base_layer: str = "", *, documents: Path) -> CacheEntry:
        """Move ``package_yaml`` (already verified) and its ``documents`` into the cache.

        Args:
            digest: the manifest digest the entry is keyed by.
            package_yaml: the extracted package.yaml; moved, not copied.
            sha256: its sha256 (hex), computed while it was extracted.
            source: the repository it came from.
            base_layer: the digest of the layer it was read from, if one was marked.
            documents: its ``documents.jsonl``, written in full by the validating pass;
                moved, and hashed here so a damaged one is caught on read.
        """
        final = self._dir(digest)
        staging = self.root / ".tmp" / f"entry-{uuid.uuid4().hex}"
        staging.mkdir()
        size = package_yaml.stat().st_size
        docs_size, docs_sha256 = documents.stat().st_size, _hash_file(documents)
        os.replace(package_yaml, staging / PACKAGE_FILE)
        os.replace(documents, staging / DOCUMENTS_FILE)
        entry = CacheEntry(digest, final / PACKAGE_FILE, size, sha256, source, base_layer,
                           docs_size, docs_sha256)
        meta = {k: v for k, v in asdict(entry).items() if k != "path"}
        (staging / META_FILE).write_text(json.dumps(meta))
        try:
            os.rename(staging, final)
        except OSError:  # another writer won the race; its entry has the same content
            shutil.rmtree(staging, ignore_errors=True)
        log.info("cache.stored", digest=digest, size=size)
        self.evict(keep=digest)
        return entry

    def entries(self) -> list[tuple[float, int, Path]]:
        """``(last use, size, directory)`` for every entry."""
        found = []
        for meta in self.root.glob(f"*/{META_FILE}"):
            with contextlib.suppress(OSError, ValueError):
                fields = json.loads(meta.read_text())
                size = int(fields["size"]) + int(fields.get("documents_size") or 0)
                found.append((meta.stat().st_mtime, size, meta.parent))
        return found

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove least recently used entries until the total fits; return their digests."""
        entries = sorted(self.entries())
        total = sum(size for _, size, _ in entries)
        removed: list[str] = []
        for _, size, directory in entries:
            if total <= self.max_bytes:
                break
            if keep and directory.name == keep.removeprefix("sha256:"):
                continue
            shutil.rmtree(directory, ignore_errors=True)
            total -= size
            removed.append("sha256:" + directory.name)
        if removed:
            log.info("cache.evicted", digests=removed, total=total)
        return removed

    def _alias_path(self, ref: str) -> Path:
        return self.root / ".refs" / hashlib.sha256(ref.encode()).hexdigest()

    def set_alias(self, ref: str, digest: str) -> None:
        """Record that ``ref`` names ``digest`` (for ``packagePullPolicy: Never``)."""
        fd, name = tempfile.mkstemp(dir=self.root / ".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"ref": ref, "digest": digest}, f)
        os.replace(name, self._alias_path(ref))

    def alias(self, ref: str) -> str | None:
        """The digest recorded for ``ref``, if any."""
        try:
            return str(json.loads(self._alias_path(ref).read_text())["digest"])
        except (OSError, ValueError, KeyError):
            return None

    def _verified_path(self, digest: str, fingerprint: str) -> Path:
        key = hashlib.sha256(f"{digest} {fingerprint}".encode()).hexdigest()
        return self.root / ".verified" / key

    def record_verified(self, digest: str, fingerprint: str, authority: str,
                        evidence: str) -> None:
        """Record that ``authority`` verified ``digest`` under the policy ``fingerprint``.

        Kept beside the entries, not in them: a digest is verified before anything of it is
        fetched, and a cached entry is trusted only under a policy that verified it.
        """
        fd, name = tempfile.mkstemp(dir=self.root / ".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"digest": digest, "fingerprint": fingerprint, "authority": authority,
                       "evidence": evidence}, f)
        os.replace(name, self._verified_path(digest, fingerprint))

    def verified(self, digest: str, fingerprint: str) -> dict[str, str] | None:
        """The record of a verification of ``digest`` under ``fingerprint``, or None."""
        try:
            found = json.loads(self._verified_path(digest, fingerprint).read_text())
        except (OSError, ValueError):
            return None
        ok = found.get("digest") == digest and found.get("fingerprint") == fingerprint
        return {k: str(v) for k, v in found.items()} if ok else None
