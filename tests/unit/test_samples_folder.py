"""Metadata and proxies of every image in the shared folder of real camera and phone
files (``../shared/samples``, or ``$SAFELIGHT_SAMPLES_DIR``), checked against the
folder's MANIFEST.md (ExifTool's reading) where it is easy to compare.

Skipped, with the reason, when the folder is absent.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from safelight.library.files.errors import MediaError
from safelight.library.files.mediatypes import media_type
from safelight.library.media.metadata import ImageMetadata, read_image_metadata
from safelight.library.render.images import ImageProxies, make_image_proxies
from safelight.testing.samples import IMAGES, SAMPLES, needs_samples
from safelight.testing.specs import DEFAULT_SPEC

pytestmark = pytest.mark.samples


DATES_OUTSIDE_EXIF = {
    "exif-samples/jpg/Reconyx_HC500_Hyperfire.jpg": "Reconyx maker note",
    "exif-samples/jpg/exif-org/olympus-d320l.jpg": "Olympus PictureInfo APP segment",
    "exif-samples/jpg/exif-org/sony-powershota5.jpg": "Canon CIFF (a PowerShot A5)",
}
"""MANIFEST dates that ExifTool found outside EXIF: safelight reads them from the
maker's own block (``capturetime``'s "maker" source), the same wall-clock time."""

EXPECTED_FAILURES: dict[str, str] = {}
"""Sample files that must fail, with a word of their reason. None does today:
``jpg/corrupted.jpg`` and ``jpg/tests/*`` broke an EXIF library, not their pixels."""


HEIF_CONTAINER_ORIENTATION = {
    "exif-samples/heic/mobile/HMD_Nokia_8.3_5G.heif": (
        6,
        "irot turns it 270 degrees anti-clockwise while its EXIF Orientation is 1: the "
        "container decides (the HEIF spec; libheif, libvips, Apple's viewers), so it is "
        "shown 3456x4608, as in every one of them. Its pixels look upright as stored "
        "(a firmware fault safelight does not guess around).",
    ),
}
"""HEIF samples whose container transforms say otherwise than the MANIFEST's EXIF
Orientation, with the orientation safelight reports (and turns the proxies by) and why."""


@dataclass(frozen=True, slots=True)
class Row:
    kind: str
    size: tuple[int, int] | None
    """As stored (ExifTool's ImageWidth x ImageHeight)."""
    orientation: int | None
    date: str


def manifest_rows() -> dict[str, Row]:
    """MANIFEST.md's tables, keyed by path relative to the samples folder."""
    if SAMPLES is None or not (SAMPLES / "MANIFEST.md").is_file():
        return {}
    rows: dict[str, Row] = {}
    section: str | None = None
    for line in (SAMPLES / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\S+) \(", line)
        if line.startswith("## "):
            section = heading.group(1) if heading else None
            continue
        if section is None or not line.startswith("| ") or line.startswith("| file"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 8:
            continue
        size = re.fullmatch(r"(\d+)x(\d+)", cells[3])
        rows[f"{section}/{cells[0]}"] = Row(
            kind=cells[2],
            size=(int(size.group(1)), int(size.group(2))) if size else None,
            orientation=int(cells[6]) if cells[6].isdigit() else None,
            date=cells[5],
        )
    return rows


ROWS = manifest_rows()


def relative(path: Path) -> str:
    assert SAMPLES is not None
    return path.relative_to(SAMPLES).as_posix()


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG"
    image.load()
    assert image.mode == "RGB"
    return image


def check_against_manifest(name: str, meta: ImageMetadata) -> None:
    row = ROWS.get(name)
    if row is None:
        return
    # HEIF: the container's irot/imir decide, not EXIF's Orientation (ADR 0029).
    orientation = HEIF_CONTAINER_ORIENTATION.get(name, (row.orientation, ""))[0]
    if row.size is not None:
        stored = (meta.height, meta.width) if meta.orientation >= 5 else (meta.width, meta.height)
        assert stored == row.size, name
    if orientation is not None:
        assert meta.orientation == orientation, name
    date = re.fullmatch(
        r"(\d{4}:\d\d:\d\d \d\d:\d\d:\d\d)(?: \((\.\d+)?(?:, )?([+-]\d\d:\d\d)?\))?", row.date
    )
    if date:
        expected_source = "maker" if name in DATES_OUTSIDE_EXIF else "exif"
        assert meta.captured_at_source == expected_source, name
        assert meta.captured_at.strftime("%Y:%m:%d %H:%M:%S") == date.group(1), name
        if date.group(2):
            fraction = date.group(2)[1:7].ljust(6, "0")
            assert meta.captured_at.microsecond == int(fraction), name
        if date.group(3):
            sign = -1 if date.group(3)[0] == "-" else 1
            hours, minutes = (int(x) for x in date.group(3)[1:].split(":"))
            assert meta.captured_at.utcoffset() == sign * timedelta(hours=hours, minutes=minutes)


def check_proxies(name: str, meta: ImageMetadata, proxies: ImageProxies) -> None:
    assert (proxies.width, proxies.height) == (meta.width, meta.height), name
    preview, thumbnail = decoded(proxies.preview.data), decoded(proxies.thumbnail.data)
    assert preview.size == (proxies.preview.width, proxies.preview.height)
    assert thumbnail.size == (proxies.thumbnail.width, proxies.thumbnail.height)
    assert preview.width == min(1920, meta.width), name  # capped, never upscaled
    assert thumbnail.width == min(300, preview.width), name
    aspect = meta.width / meta.height
    for proxy in (preview, thumbnail):
        assert abs(proxy.width / proxy.height - aspect) <= max(0.02 * aspect, 1 / proxy.height), (
            name
        )
    assert proxies.blurhash and len(proxies.blurhash) == 28


@needs_samples
@pytest.mark.parametrize("path", IMAGES, ids=[relative(p) for p in IMAGES] if SAMPLES else [])
def test_sample_image(path: Path) -> None:
    name = relative(path)
    if name in EXPECTED_FAILURES:
        with pytest.raises(MediaError) as caught:
            read_image_metadata(path)
            make_image_proxies(path, DEFAULT_SPEC)
        assert caught.value.reason
        return
    meta = read_image_metadata(path)
    check_against_manifest(name, meta)
    check_proxies(name, meta, make_image_proxies(path, DEFAULT_SPEC))


@needs_samples
@pytest.mark.parametrize("shape", ["landscape", "portrait"])
def test_orientation_samples_come_out_alike(shape: str) -> None:
    """exif-samples' orientation set: one picture stored eight ways; every proxy must
    match the orientation-1 one (a wrong turn or flip differs by far more)."""
    assert SAMPLES is not None
    folder = SAMPLES / "exif-samples" / "jpg" / "orientation"
    if not folder.is_dir():
        pytest.skip("orientation samples absent")
    previews = [
        np.asarray(
            decoded(make_image_proxies(folder / f"{shape}_{n}.jpg", DEFAULT_SPEC).thumbnail.data),
            dtype=np.int16,
        )
        for n in range(1, 9)
    ]
    reference = previews[0]
    for n, preview in enumerate(previews[1:], start=2):
        assert preview.shape == reference.shape, n
        assert np.abs(preview - reference).mean() < 8, f"{shape}_{n} is not upright"
    wrong = np.asarray(
        Image.fromarray(reference.astype(np.uint8)).transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    )
    assert np.abs(wrong.astype(np.int16) - reference).mean() > 20  # the check can fail


@needs_samples
def test_truncated_copies_of_real_files_fail_with_a_reason(tmp_path: Path) -> None:
    """A half-copied file (a sync still running, a dying disk) is a MediaError, never a
    crash and never a grey half-picture."""
    kinds: dict[str, Path] = {}
    for path in IMAGES:
        kinds.setdefault(path.suffix.lower(), path)
    assert {".jpg", ".heic"} <= set(kinds)
    for suffix, path in sorted(kinds.items()):
        data = path.read_bytes()
        cut = tmp_path / f"cut{suffix}"
        cut.write_bytes(data[: len(data) // 2])
        with pytest.raises(MediaError) as caught:
            make_image_proxies(cut, DEFAULT_SPEC)
        assert caught.value.reason, suffix
        print(f"{relative(path)} cut in half: {type(caught.value).__name__}: {caught.value.reason}")
        try:
            read_image_metadata(cut)  # headers may survive the cut; if not, a MediaError
        except MediaError as error:
            assert error.reason


@needs_samples
def test_non_images_in_the_samples_are_not_media() -> None:
    assert SAMPLES is not None
    others = [p for p in SAMPLES.rglob("*") if p.is_file() and p not in IMAGES]
    assert others, "expected READMEs and sidecars"
    assert all(media_type(p) is None for p in others)
