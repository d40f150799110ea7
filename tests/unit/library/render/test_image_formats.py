"""Pillow opens only the formats safelight reads (issue #27, item 4).

A ``.jpg`` holding PostScript once reached Pillow's EPS plugin, which runs ``gs``. Here a
fake ``gs`` first on ``PATH`` writes a marker if it is ever run: through the decode
processes, the thread path and every other place an image is opened, the file is refused
with a reason and the marker never appears. The source is scanned so that a future
``Image.open`` cannot forget its ``formats=``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import rawpy
from PIL import EpsImagePlugin, Image

from safelight.library.files.errors import MediaError, UnsupportedMedia
from safelight.library.files.mediatypes import IMAGE_EXTENSIONS, IMAGE_FORMATS
from safelight.library.grouping.bursts import sharpness
from safelight.library.media.metadata import read_image_metadata
from safelight.library.render.decoding import ImageDecoder, decode_image
from safelight.library.render.raw import _preview_image
from safelight.library.render.video import _poster_proxies
from safelight.testing.decoders import running_decoder
from safelight.testing.ghostscript import POSTSCRIPT, FakeGhostscript
from safelight.testing.specs import proxy_spec

SPEC = proxy_spec(thumbnail_width=32, preview_width=96)
SRC = Path(__file__).resolve().parents[4] / "src"


@pytest.fixture
def gs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeGhostscript:
    return FakeGhostscript(tmp_path, monkeypatch)


@pytest.fixture
def postscript(tmp_path: Path) -> Path:
    path = tmp_path / "IMG_0001.jpg"
    path.write_bytes(POSTSCRIPT)
    return path


@pytest.fixture
async def decoder(gs: FakeGhostscript) -> AsyncIterator[ImageDecoder]:
    """One decode process, started after the fake gs is on PATH (it inherits PATH)."""
    async with running_decoder(1) as decoder:
        yield decoder


def test_the_fake_gs_is_what_pillow_would_run(gs: FakeGhostscript) -> None:
    """The test's premise: Pillow's EPS plugin finds and runs the fake."""
    assert EpsImagePlugin.has_ghostscript()
    assert gs.ran()


async def test_postscript_named_jpg_is_refused_in_a_decode_process_and_gs_never_runs(
    gs: FakeGhostscript, postscript: Path, decoder: ImageDecoder
) -> None:
    with pytest.raises(UnsupportedMedia) as refused:
        await decoder.decode(postscript, SPEC)

    assert refused.value.reason.startswith("not an image safelight reads (JPEG, HEIF, PNG")
    assert decoder.pids()  # it was a decode process that refused it
    assert not gs.ran()


def test_postscript_named_jpg_is_refused_by_metadata_and_in_a_thread(
    gs: FakeGhostscript, postscript: Path
) -> None:
    with pytest.raises(UnsupportedMedia, match="not an image safelight reads"):
        read_image_metadata(postscript)
    with pytest.raises(UnsupportedMedia, match="not an image safelight reads"):
        decode_image(postscript, SPEC)
    assert not gs.ran()


def test_postscript_anywhere_else_an_image_is_opened_is_refused(
    gs: FakeGhostscript, postscript: Path
) -> None:
    """A RAW's embedded preview, a burst member's thumbnail, a video's poster frame."""
    preview = SimpleNamespace(format=rawpy.ThumbFormat.JPEG, data=POSTSCRIPT)
    assert _preview_image(preview, 96, swaps=False) is None
    assert sharpness(postscript) is None
    with pytest.raises(MediaError, match="unreadable poster frame"):
        _poster_proxies(POSTSCRIPT, SPEC)
    assert not gs.ran()


def test_every_image_extension_is_one_of_the_formats_safelight_reads() -> None:
    by_extension = Image.registered_extensions()
    opened_as = {extension: by_extension.get(extension) for extension in IMAGE_EXTENSIONS}
    assert {e: name for e, name in opened_as.items() if name not in IMAGE_FORMATS} == {}


# Run in a fresh interpreter: the test process may have imported every plugin already.
OPEN_EACH_FORMAT = """
import io, sys
from PIL import Image
from safelight.library.files.errors import UnsupportedMedia
from safelight.library.files.mediatypes import IMAGE_FORMATS
from safelight.library.media.metadata import open_image
missing = sorted(set(IMAGE_FORMATS) - set(Image.OPEN))
for name in ("JPEG", "PNG", "TIFF", "WEBP", "GIF", "BMP"):
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, name)
    buffer.seek(0)
    with open_image(buffer) as image:
        assert image.format == name, image.format
try:
    open_image(io.BytesIO(sys.stdin.buffer.read()))
except UnsupportedMedia:
    pass
print(missing, "PIL.EpsImagePlugin" in sys.modules)
"""


def test_opening_images_never_loads_a_plugin_of_another_format() -> None:
    """Every format safelight reads is registered by name, so Image.open never falls back
    to Image.init(), which imports every plugin Pillow has (EPS among them)."""
    result = subprocess.run(
        [sys.executable, "-c", OPEN_EACH_FORMAT],
        input=POSTSCRIPT,
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.decode().split() == ["[]", "False"], result.stderr.decode()


# --- no Image.open without formats= ------------------------------------------------------


def _opens_without_formats(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "PIL.Image"
            and any(alias.name == "open" for alias in node.names)
        ):
            found.append(f"{path}:{node.lineno}: imports PIL.Image.open by name")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "open"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "Image"
        ):
            formats = [k for k in node.keywords if k.arg == "formats"]
            if not formats or (
                isinstance(formats[0].value, ast.Constant) and formats[0].value.value is None
            ):
                found.append(f"{path}:{node.lineno}: Image.open without formats=")
    return found


def test_every_image_open_in_the_source_names_its_formats() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert any("Image.open(" in f.read_text() for f in files)  # the scan sees the calls
    assert [line for f in files for line in _opens_without_formats(f)] == []


def test_the_scan_finds_an_open_without_formats(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from PIL import Image\n"
        "Image.open(fp)\n"
        "Image.open(fp, formats=None)\n"
        "Image.open(fp, formats=('JPEG',))\n"
        "from PIL.Image import open\n"
    )
    lines = [int(found.split(":")[1]) for found in _opens_without_formats(sample)]
    assert sorted(lines) == [2, 3, 5]
