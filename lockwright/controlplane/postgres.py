"""PostgreSQL 15 (Debian's ``postgresql`` package) as a plain process on a loopback port.

The data directory is made once with ``initdb`` (trust authentication on loopback, the
superuser named after the Temporal cluster's user); ``postgres`` then runs on it until
stopped, killed or restarted on the same data. PostgreSQL refuses to run as root: as root,
it runs in a user namespace that maps root to an unprivileged uid (``unshare --user``), so
it owns the files it finds without any ``chown`` and sees no root privileges.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PG_BIN = Path(os.environ.get("LOCKWRIGHT_POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))
UNPRIVILEGED = "1000"  # the uid and gid root becomes inside the user namespace
#: Settings for a throwaway test database that a test SIGKILLs: nothing is forced to disk
#: (fsync, full_page_writes: only an OS crash could lose or tear what the OS was handed),
#: but every commit is in the WAL file before it is acknowledged (synchronous_commit stays
#: on). With asynchronous commit a SIGKILL of postgres lost commits Temporal had been told
#: were made, up to 3 wal_writer_delay of them: after a kill, a child workflow's start
#: stood without its first workflow task, Running forever (docs/testing.md, "Faults:
#: every server killed mid-change").
SETTINGS = {"listen_addresses": "127.0.0.1", "unix_socket_directories": "",
            "fsync": "off", "synchronous_commit": "on", "full_page_writes": "off",
            "max_connections": "200", "shared_buffers": "64MB"}


class PostgresError(Exception):
    """PostgreSQL could not be set up; the message says what and how to fix it."""


@dataclass(frozen=True)
class Postgres:
    """How to run one PostgreSQL server on ``data`` (its files) and ``port``."""

    data: Path
    port: int
    user: str = "temporal"

    def argv(self) -> list[str]:
        """The command line of the server process (run in the foreground)."""
        settings = [a for k, v in SETTINGS.items() for a in ("-c", f"{k}={v}")]
        return [*as_unprivileged(), str(_binary("postgres")), "-D", str(self.data),
                "-p", str(self.port), *settings]

    def initialised(self) -> bool:
        return (self.data / "PG_VERSION").exists()

    def init(self) -> None:
        """``initdb`` the data directory unless it holds a cluster already."""
        if self.initialised():
            return
        self.data.mkdir(parents=True, exist_ok=True)
        self.data.chmod(0o700)
        done = subprocess.run(
            [*as_unprivileged(), str(_binary("initdb")), "-D", str(self.data), "-U", self.user,
             "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
            capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise PostgresError(f"initdb {self.data} failed ({done.returncode}):\n"
                                f"{(done.stdout + done.stderr)[-3000:]}")

    def ready(self) -> bool:
        """True once the server accepts connections (``pg_isready``)."""
        done = subprocess.run([str(_binary("pg_isready")), "-q", "-h", "127.0.0.1", "-p",
                               str(self.port), "-U", self.user, "-d", "postgres"],
                              capture_output=True, check=False, timeout=10)
        return done.returncode == 0


def as_unprivileged() -> list[str]:
    """The prefix that runs a command as a non-root uid when we are root (else nothing)."""
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        raise PostgresError("PostgreSQL refuses to run as root and `unshare` (util-linux) "
                            "is missing: install util-linux or run as a non-root user")
    return [unshare, "--user", f"--map-user={UNPRIVILEGED}", f"--map-group={UNPRIVILEGED}"]


def _binary(name: str) -> Path:
    path = PG_BIN / name
    if not os.access(path, os.X_OK):
        raise PostgresError(f"{path} is missing: install PostgreSQL 15 (apt-get install "
                            "postgresql, as scripts/setup.sh does) or set "
                            "LOCKWRIGHT_POSTGRES_BIN to a directory holding initdb and postgres")
    return path
