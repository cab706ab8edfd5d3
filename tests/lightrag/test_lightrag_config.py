"""Where mnote.lightrag.load_config takes each LightRAG setting from.

    nice .venv/bin/python -m pytest tests/lightrag/test_lightrag_config.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mnote.lightrag import ImproperlyConfiguredLightRAG, load_config
from mnote.lightrag.config import parse_dotenv

DEFAULTS = {
    "default_url": "http://127.0.0.1:9621",
    "default_input_dir": Path("/var/mnote/lightrag/inputs"),
    "default_working_dir": Path("/var/mnote/lightrag/rag_storage"),
}


@pytest.fixture
def server_env_file(tmp_path):
    """LightRAG's own .env, as its server reads it."""
    path = tmp_path / "lightrag" / ".env"
    path.parent.mkdir()
    path.write_text(
        "# LightRAG server settings\n"
        "HOST=0.0.0.0\n"
        "PORT=9722\n"
        "export LIGHTRAG_API_KEY='key-from-env-file'\n"
        "INPUT_DIR=/srv/lightrag/inputs  # scanned by /documents/scan\n"
        'WORKING_DIR="/srv/lightrag/rag_storage"\n',
        encoding="utf-8",
    )
    return path


def test_it_uses_the_defaults_when_nothing_is_set():
    config = load_config({}, **DEFAULTS)

    assert config.base_url == "http://127.0.0.1:9621"
    assert config.api_key is None
    assert config.input_dir == Path("/var/mnote/lightrag/inputs")
    assert config.working_dir == Path("/var/mnote/lightrag/rag_storage")
    assert config.env_file is None
    assert config.sources == {
        "base_url": "default",
        "api_key": "not set",
        "input_dir": "default",
        "working_dir": "default",
        "env_file": "not set",
    }


def test_it_prefers_mnote_variables_over_the_env_file_and_generic_ones(server_env_file):
    environ = {
        "MNOTE_LIGHTRAG_ENV_FILE": str(server_env_file),
        "MNOTE_LIGHTRAG_URL": "https://rag.example.org/lightrag/",
        "MNOTE_LIGHTRAG_API_KEY": "mnote-key",
        "MNOTE_LIGHTRAG_INPUT_DIR": "/data/inputs",
        "MNOTE_LIGHTRAG_WORKING_DIR": "/data/rag_storage",
        "LIGHTRAG_API_KEY": "generic-key",
        "INPUT_DIR": "/generic/inputs",
        "WORKING_DIR": "/generic/rag_storage",
    }

    config = load_config(environ, **DEFAULTS)

    assert config.base_url == "https://rag.example.org/lightrag"
    assert config.api_key == "mnote-key"
    assert config.input_dir == Path("/data/inputs")
    assert config.working_dir == Path("/data/rag_storage")
    assert config.sources["api_key"] == "MNOTE_LIGHTRAG_API_KEY"
    assert config.sources["base_url"] == "MNOTE_LIGHTRAG_URL"


def test_it_prefers_the_env_file_over_stale_generic_variables(server_env_file):
    environ = {
        "MNOTE_LIGHTRAG_ENV_FILE": str(server_env_file),
        "LIGHTRAG_API_KEY": "stale-key",
        "INPUT_DIR": "/stale/inputs",
        "WORKING_DIR": "/stale/rag_storage",
    }

    config = load_config(environ, **DEFAULTS)

    assert config.api_key == "key-from-env-file"
    assert config.input_dir == Path("/srv/lightrag/inputs")
    assert config.working_dir == Path("/srv/lightrag/rag_storage")
    assert config.env_file == server_env_file
    assert config.sources["api_key"] == f"{server_env_file}: LIGHTRAG_API_KEY"
    assert config.sources["env_file"] == "MNOTE_LIGHTRAG_ENV_FILE"


def test_it_falls_back_to_generic_variables_without_an_env_file():
    environ = {"LIGHTRAG_API_KEY": "generic-key", "INPUT_DIR": "/generic/inputs", "WORKING_DIR": " "}

    config = load_config(environ, **DEFAULTS)

    assert config.api_key == "generic-key"
    assert config.input_dir == Path("/generic/inputs")
    assert config.working_dir == DEFAULTS["default_working_dir"]
    assert config.sources["input_dir"] == "INPUT_DIR"
    assert config.sources["working_dir"] == "default"


def test_it_treats_a_blank_mnote_variable_as_unset(server_env_file):
    environ = {"MNOTE_LIGHTRAG_ENV_FILE": str(server_env_file), "MNOTE_LIGHTRAG_API_KEY": ""}

    assert load_config(environ, **DEFAULTS).api_key == "key-from-env-file"


def test_it_builds_the_url_from_the_env_files_host_and_port(server_env_file):
    config = load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(server_env_file)}, **DEFAULTS)

    assert config.base_url == "http://127.0.0.1:9722"
    assert config.sources["base_url"] == f"{server_env_file}: HOST/PORT"


def test_it_uses_https_and_the_default_port_when_the_env_file_says_so(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("HOST=rag.internal\nSSL=true\n", encoding="utf-8")

    config = load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(env_file)}, **DEFAULTS)

    assert config.base_url == "https://rag.internal:9621"


def test_it_reads_relative_dirs_in_the_env_file_from_its_folder(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("INPUT_DIR=./inputs\nWORKING_DIR=rag_storage\n", encoding="utf-8")

    config = load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(env_file)}, **DEFAULTS)

    assert config.input_dir == tmp_path / "inputs"
    assert config.working_dir == tmp_path / "rag_storage"
    assert config.base_url == "http://127.0.0.1:9621"
    assert config.sources["base_url"] == "default"


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1:9621", "127.0.0.1:9621", "http://", "http://127.0.0.1:notaport", "http://h:9621/?x=1"],
)
def test_it_rejects_a_url_that_is_not_http(url):
    with pytest.raises(ImproperlyConfiguredLightRAG, match="MNOTE_LIGHTRAG_URL"):
        load_config({"MNOTE_LIGHTRAG_URL": url}, **DEFAULTS)


def test_it_rejects_an_env_file_that_does_not_exist(tmp_path):
    missing = tmp_path / "nowhere" / ".env"

    with pytest.raises(ImproperlyConfiguredLightRAG, match="MNOTE_LIGHTRAG_ENV_FILE"):
        load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(missing)}, **DEFAULTS)


def test_it_rejects_a_bad_port_in_the_env_file(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("PORT=ninety\n", encoding="utf-8")

    with pytest.raises(ImproperlyConfiguredLightRAG, match="PORT"):
        load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(env_file)}, **DEFAULTS)


def test_it_refuses_interpolation_it_cannot_expand(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("INPUT_DIR=${HOME}/inputs\n", encoding="utf-8")

    with pytest.raises(ImproperlyConfiguredLightRAG, match="interpolation"):
        load_config({"MNOTE_LIGHTRAG_ENV_FILE": str(env_file)}, **DEFAULTS)


def test_it_is_a_value_error_for_settings_to_convert():
    assert issubclass(ImproperlyConfiguredLightRAG, ValueError)


def test_it_keeps_the_api_key_out_of_repr():
    config = load_config({"MNOTE_LIGHTRAG_API_KEY": "very-secret"}, **DEFAULTS)

    assert "very-secret" not in repr(config)


def test_it_parses_dotenv_like_python_dotenv():
    text = (
        "# comment line\n"
        "\n"
        "PLAIN=value\n"
        "export EXPORTED = spaced out  \n"
        "INLINE=value # comment\n"
        "HASH_INSIDE=a#b\n"
        "SINGLE='literal \\n # not a comment'\n"
        'DOUBLE="line\\none \\"quoted\\" C:\\path"  # comment\n'
        'MULTI="first\n'
        'second"\n'
        "EMPTY=\n"
        "not an assignment\n"
        'BROKEN="never closed\n'
        "PLAIN=last wins\r\n"
    )

    assert parse_dotenv(text) == {
        "PLAIN": "last wins",
        "EXPORTED": "spaced out",
        "INLINE": "value",
        "HASH_INSIDE": "a#b",
        "SINGLE": "literal \\n # not a comment",
        "DOUBLE": 'line\none "quoted" C:\\path',
        "MULTI": "first\nsecond",
        "EMPTY": "",
    }


def test_several_servers_in_the_url_share_the_queries_and_the_first_takes_the_documents():
    config = load_config({"MNOTE_LIGHTRAG_URL": " http://rag-1:9621/ , http://rag-2:9621,http://rag-1:9621"}, **DEFAULTS)
    assert config.base_url == "http://rag-1:9621"
    assert config.query_urls == ("http://rag-1:9621", "http://rag-2:9621")
    assert load_config({"MNOTE_LIGHTRAG_URL": "http://rag-1:9621"}, **DEFAULTS).query_urls == ()
    with pytest.raises(ImproperlyConfiguredLightRAG, match="MNOTE_LIGHTRAG_URL must be an http"):
        load_config({"MNOTE_LIGHTRAG_URL": "http://rag-1:9621,"}, **DEFAULTS)
