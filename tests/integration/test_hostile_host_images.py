"""A hostile file in a library: a PostScript file named ``.jpg`` (issue #27, item 4).

Crawled through the decode processes, it is one file's error with a reason, its
neighbours are indexed, and the fake Ghostscript first on PATH never runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.decoders import running_decoder
from safelight.testing.ghostscript import POSTSCRIPT, FakeGhostscript
from safelight.testing.handlers import jpeg, make_harness, write
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def test_a_postscript_file_named_jpg_is_refused_and_ghostscript_never_runs(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gs = FakeGhostscript(tmp_path, monkeypatch)
    library = tmp_path / "library"
    write(library, "2024/IMG_0001.jpg", POSTSCRIPT)
    write(library, "2024/IMG_0002.jpg", jpeg(7))
    async with running_decoder(1) as decoder:  # started after the fake gs is on PATH
        h = make_harness(pool, tmp_path, decoder=decoder)
        config = await h.add_config(library)

        item = await h.run("crawl", config_id=config)

        assert decoder.pids()  # the photos went through a decode process
    assert item.status is Status.SUCCEEDED, item.error
    errors = await h.rows("SELECT file_path, reason FROM asset_errors")
    assert [path for path, _ in errors] == ["2024/IMG_0001.jpg"]
    assert errors[0][1].startswith("not an image safelight reads (JPEG, HEIF, PNG")
    assert await h.rows("SELECT file_path FROM assets") == [("2024/IMG_0002.jpg",)]
    assert not gs.ran()
    assert (library / "2024/IMG_0001.jpg").read_bytes() == POSTSCRIPT
