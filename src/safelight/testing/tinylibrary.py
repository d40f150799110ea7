"""A library of many tiny, distinct JPEGs, and the asset rows a crawl would record of
them: for what a crawl does with many files (the walk and the index), not with pixels.

Each photo is an 8x8 JPEG whose COM segment names its number and generation, so every
file has content of its own (a move is found by its hash) and a new generation is new
content of the same size class. ``bench/library.py`` and the crawl's tests use it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import xxhash
from PIL import Image

CAPTURED = datetime(2020, 1, 1, tzinfo=UTC)
ASSET_COLUMNS = (
    "storage_config_id, file_path, file_name, content_hash, size_bytes, modified_at,"
    " modified_ns, media_type, captured_at, captured_local, captured_at_source,"
    " captured_year, captured_month, captured_day, last_seen_at, created_at"
)
"""The columns of ``asset_rows``, for a COPY into ``assets``."""


@cache
def _picture() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (120, 80, 40)).save(out, "JPEG", quality=75)
    return out.getvalue()


def photo_bytes(number: int, generation: int = 0) -> bytes:
    """A distinct valid JPEG: the tiny picture with a COM segment naming it."""
    comment = f"safelight tiny photo {number} generation {generation}".encode()
    segment = b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment
    picture = _picture()
    return picture[:2] + segment + picture[2:]


def relative_path(number: int, per_folder: int) -> str:
    """Photo ``number``'s place: ``per_folder`` to a folder, a hundred folders to a year."""
    folder = number // per_folder
    return f"y{folder // 100:03d}/f{folder:05d}/p{number:07d}.jpg"


def write_photo(path: Path, number: int, generation: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, photo_bytes(number, generation))
    finally:
        os.close(fd)


def generate_tree(root: Path, count: int, per_folder: int) -> None:
    """Photos 0 .. count - 1 under ``root`` at their ``relative_path``."""
    made: set[str] = set()
    for number in range(count):
        relative = relative_path(number, per_folder)
        parent = relative.rsplit("/", 1)[0]
        if parent not in made:
            (root / parent).mkdir(parents=True, exist_ok=True)
            made.add(parent)
        write_photo(root / relative, number)


def asset_rows(
    config_id: Any, root: Path, photos: Iterable[tuple[str, int]]
) -> Iterator[tuple[Any, ...]]:
    """The live asset row a crawl would record of each ``(relative path, number)`` of
    generation 0 under ``root`` (its real hash, size and mtime), in ``ASSET_COLUMNS``."""
    for relative, number in photos:
        st = os.stat(root / relative)
        yield (
            config_id,
            relative,
            relative.rsplit("/", 1)[-1],
            xxhash.xxh3_64_hexdigest(photo_bytes(number)),
            st.st_size,
            datetime.fromtimestamp(st.st_mtime_ns / 1e9, UTC),
            st.st_mtime_ns,
            "image",
            CAPTURED,
            CAPTURED.replace(tzinfo=None),
            "file",
            CAPTURED.year,
            CAPTURED.month,
            CAPTURED.day,
            CAPTURED,
            CAPTURED,
        )
