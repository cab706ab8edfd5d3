"""LightRAG with the local model endpoint is given the system's CA
certificates as a directory: its OpenAI binding builds a TLS context for every
embedding call (every search), and from the bundle file that parsed ~150
certificates each time (~40 ms of CPU a search) for a plain-HTTP endpoint."""

import json
import os
import subprocess
from pathlib import Path

from mnote.stack.processes import StackConfig, config_from_environ, lightrag_server_env
from tests.paths import REPO_DIR

LIGHTRAG_PYTHON = REPO_DIR / ".venv-lightrag" / "bin" / "python"

# What LightRAG's OpenAI client builds per call (httpx2's default context), and the trust it has.
CLIENT_CONTEXT = """
import json, ssl
from lightrag.llm.openai import create_openai_async_client
import httpcore2
client = create_openai_async_client(api_key="none", base_url="http://127.0.0.1:9/v1")
context = httpcore2.default_ssl_context()
print(json.dumps({"parsed": context.cert_store_stats()["x509"], "verifies": context.verify_mode == ssl.CERT_REQUIRED,
                  "directory": ssl.get_default_verify_paths().capath}))
"""


def test_lightrag_on_the_local_endpoint_reads_certificates_from_the_system_directory(tmp_path):
    env = lightrag_server_env(config_from_environ({}, tmp_path))

    directory = Path(env["SSL_CERT_DIR"])
    assert directory.is_dir() and any(name.endswith(".0") for name in os.listdir(directory))
    # An SSL_CERT_FILE from the environment would win over the directory (and parse it all).
    assert env["SSL_CERT_FILE"] == ""


def test_an_external_model_keeps_the_trust_store_of_the_environment(tmp_path):
    environ = {"MNOTE_LLM_HOST": "https://llm.example.org/v1", "MNOTE_LLM_MODEL": "big-model"}

    env = lightrag_server_env(config_from_environ(environ, tmp_path))

    assert "SSL_CERT_FILE" not in env and "SSL_CERT_DIR" not in env


def test_lightrags_client_then_parses_no_certificate_and_still_verifies(tmp_path):
    env = lightrag_server_env(StackConfig(data_dir=tmp_path, api_key="k"))
    child_env = {**os.environ, "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}  # as a user's shell may set it

    before = subprocess.run([str(LIGHTRAG_PYTHON), "-c", CLIENT_CONTEXT], env=child_env, capture_output=True,
                            text=True, check=True, timeout=120)  # fmt: skip
    after = subprocess.run([str(LIGHTRAG_PYTHON), "-c", CLIENT_CONTEXT], capture_output=True, text=True, check=True,
                           env={**child_env, "SSL_CERT_FILE": env["SSL_CERT_FILE"], "SSL_CERT_DIR": env["SSL_CERT_DIR"]},
                           timeout=120)  # fmt: skip

    if os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
        assert json.loads(before.stdout)["parsed"] > 10
    measured = json.loads(after.stdout)
    assert measured["parsed"] == 0  # looked up per handshake instead
    assert measured["verifies"] and measured["directory"] == env["SSL_CERT_DIR"]
