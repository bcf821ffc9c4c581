"""zstd-compressed transcripts (`*.jsonl.zst`, as Codex can store rollouts): read as a stream, written whole.

A file is compressed when it starts with the zstd frame magic, whatever its name (temp files included).
Reading decompresses on the fly; writing compresses the whole new content. `zstandard` is the optional
`zstd` extra: without it a compressed file is one clear per-file error.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType
from typing import IO

from batchcompact.errors import MissingExtraError

# Said without the path: the warning, row or problem line that reports it names the file once.
ZSTD_MISSING = "zstd-compressed transcript: install the zstandard package (pip install 'batchcompact[zstd]')"

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def is_zstd(path: str | Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == ZSTD_MAGIC
    except OSError:
        return False


def _zstandard() -> ModuleType:
    try:
        import zstandard
    except ImportError:
        raise MissingExtraError(ZSTD_MISSING) from None
    return zstandard


def open_session(path: str | Path, buffer_size: int = io.DEFAULT_BUFFER_SIZE) -> IO[bytes]:
    """The transcript's bytes: the file itself, or its decompressed stream when it is zstd-compressed.
    `buffer_size`: of the plain file (readers of whole files: large; a probe of the first bytes: small)."""
    raw = open(path, "rb", buffering=buffer_size)  # noqa: SIM115 - returned to the caller, closed by it
    if raw.read(4) != ZSTD_MAGIC:
        raw.seek(0)
        return raw
    raw.seek(0)
    try:
        reader = _zstandard().ZstdDecompressor().stream_reader(raw, closefd=True)
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(reader, buffer_size=1 << 20)


def decompress(data: bytes) -> bytes:
    """A whole zstd file's content (frames without a recorded size included)."""
    reader = _zstandard().ZstdDecompressor().stream_reader(io.BytesIO(data))
    return reader.read()


def compressor_writer(out: IO[bytes]) -> IO[bytes]:
    """A writer that compresses into `out` (close it to finish the frame; `out` stays open)."""
    return _zstandard().ZstdCompressor(level=3).stream_writer(out, closefd=False)


def is_decompress_error(exc: BaseException) -> bool:
    """A damaged zstd stream (zstandard's ZstdError), without importing zstandard to ask."""
    return type(exc).__name__ == "ZstdError"
