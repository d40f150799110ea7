"""What a decoder says while a crawl decodes a photo in a decode process (Pillow's
warnings, libtiff's lines written from C to stderr), and what ffmpeg says of a video it
made proxies of, goes to the log with the file's name, never to the terminal as bare
lines (ADR 0057), on real PostgreSQL."""

from __future__ import annotations

import io
import logging
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, TiffImagePlugin
from psycopg_pool import AsyncConnectionPool

from safelight.library.render.decoding import ImageDecoder
from safelight.testing.handlers import crawl_result, jpeg, make_harness, write
from safelight.work.model import Status

pytestmark = pytest.mark.integration

LIBTIFF_SAYS = "TIFFFetchNormalTag"
PILLOW_SAYS = "Metadata Warning, tag 282 had too many entries"


def odd_tiff() -> bytes:
    """An LZW TIFF (decoded by libtiff) whose IFD has two odd entries: a private tag of
    a type TIFF does not have (libtiff writes a line to stderr, from C, as it reads the
    directory) and two X resolutions where one belongs (Pillow warns, in Python)."""
    info = TiffImagePlugin.ImageFileDirectory_v2()
    info[65000] = "private"
    info.tagtype[65000] = 2  # ASCII, as written; made unknown below
    info[282] = 72.0
    out = io.BytesIO()
    picture = Image.new("RGB", (64, 48), (200, 10, 10))
    picture.save(out, "TIFF", compression="tiff_lzw", tiffinfo=info)
    data = bytearray(out.getvalue())
    assert data[:4] == b"II*\x00"
    ifd = struct.unpack_from("<I", data, 4)[0]
    patched = set()
    for i in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * i
        tag = struct.unpack_from("<H", data, at)[0]
        if tag == 65000:
            struct.pack_into("<H", data, at + 2, 99)  # no such type
            patched.add(tag)
        elif tag == 282:
            struct.pack_into("<I", data, at + 4, 2)  # its count: two rationals
            patched.add(tag)
    assert patched == {65000, 282}
    return bytes(data)


async def test_a_decoders_messages_go_to_the_log_with_the_files_name(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "library"
    write(root, "scans/odd.tif", odd_tiff())
    write(root, "quiet.jpg", jpeg(1))
    decoder = ImageDecoder(1)
    try:
        h = make_harness(pool, tmp_path, decoder=decoder)
        config = await h.add_config(root)
        capfd.readouterr()
        with caplog.at_level(logging.WARNING, logger="safelight.decode"):
            item = await h.run("crawl", config_id=config)
        assert item.status is Status.SUCCEEDED, item.error
    finally:
        decoder.shutdown()

    # Both files are photos: what was said is no error.
    result = crawl_result(item)
    assert (result.ingested, result.errors) == (2, ())
    # Nothing reached the terminal: the decode process's stderr is the test's.
    out, err = capfd.readouterr()
    assert LIBTIFF_SAYS not in err + out and PILLOW_SAYS not in err + out
    assert "Warning" not in err
    said = [r.getMessage() for r in caplog.records if r.name == "safelight.decode"]
    assert any(m.startswith("decoding scans/odd.tif: ") and LIBTIFF_SAYS in m for m in said), said
    assert any(
        m == f"decoding scans/odd.tif: UserWarning: {PILLOW_SAYS}: 2, expected 1" for m in said
    ), said
    assert not any("quiet.jpg" in m for m in said)


def damaged_clip(folder: Path) -> bytes:
    """Two seconds of H.264 whose packets after the first few hundred bytes have eight
    bytes overwritten every kilobyte: ffmpeg decodes it to the end, exits 0, and says
    "error while decoding MB ..." on its stderr for the frames it patched up."""
    clip = folder / "clip.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10",
         "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "5",
         "-movflags", "+faststart", "-y", str(clip)],
        check=True,
    )  # fmt: skip
    data = bytearray(clip.read_bytes())
    clip.unlink()
    start = data.find(b"mdat") + 2000
    for at in range(start, len(data), 997):
        data[at : at + 8] = b"\xff" * 8
    return bytes(data)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg and ffprobe")
async def test_what_ffmpeg_says_of_a_video_it_made_proxies_of_goes_to_the_log(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "library"
    write(root, "clips/damaged.mp4", damaged_clip(tmp_path))
    h = make_harness(pool, tmp_path)
    config = await h.add_config(root)
    capfd.readouterr()

    with caplog.at_level(logging.WARNING, logger="safelight.decode"):
        item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert (result.ingested, result.videos, result.errors) == (1, 1, ())
    said = [r.getMessage() for r in caplog.records if r.name == "safelight.decode"]
    assert said and all(m.startswith("decoding clips/damaged.mp4: ") for m in said), said
    assert any("error while decoding" in m for m in said), said
    out, err = capfd.readouterr()
    assert "error while decoding" not in out + err
