"""``safelight run`` then ``safelight assets``: a photo's place (EXIF GPS, and the place
it names) and a date found only in XMP reach the database and the listing, in its
table and its JSON."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from safelight.library.media.xmp import NS_XMP
from safelight.testing.dateplaces import exif_with_gps, xmp_packet
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance


def test_the_place_and_an_xmp_date_are_stored_and_listed(invoke: Invoke, tmp_path: Path) -> None:
    root = tmp_path / "trip"
    root.mkdir()
    picture = Image.new("RGB", (64, 48), (40, 90, 160))
    placed, dated, bare = io.BytesIO(), io.BytesIO(), io.BytesIO()
    picture.save(placed, "JPEG", exif=exif_with_gps(39.115, -108.400968, 1483.9, make="Canon"))
    packet = xmp_packet({(NS_XMP, "CreateDate"): "2022-01-10T15:15:44-04:00"})
    picture.save(dated, "JPEG", xmp=packet)
    picture.save(bare, "JPEG", quality=70)
    for name, buffer in (("placed.jpg", placed), ("dated.jpg", dated), ("bare.jpg", bare)):
        (root / name).write_bytes(buffer.getvalue())

    summary = json_of(invoke("run", str(root), "--json"))
    assert summary["status"] == "succeeded" and summary["new"] == 3
    assert summary["photos_dated_by_file"] == 2  # placed.jpg has no date, bare.jpg none

    rows = {row["file_path"]: row for row in json_of(invoke("assets", "--json"))}
    assert abs(rows["placed.jpg"]["latitude"] - 39.115) < 1e-6
    assert abs(rows["placed.jpg"]["longitude"] + 108.400968) < 1e-6
    assert abs(rows["placed.jpg"]["altitude_m"] - 1483.9) < 0.01
    assert rows["bare.jpg"]["latitude"] is None and rows["bare.jpg"]["altitude_m"] is None
    assert rows["dated.jpg"]["captured_at_source"] == "xmp"
    assert rows["dated.jpg"]["captured_at"].startswith("2022-01-10T19:15:44")  # UTC
    listing = invoke("assets")
    assert listing.exit_code == 0, listing.output
    # The place its position names (GeoNames', offline; ADR 0065), with its zone.
    assert "Clifton, United States" in listing.stdout
    assert (rows["placed.jpg"]["place_city"], rows["placed.jpg"]["place_country_code"]) == (
        "Clifton",
        "US",
    )
    assert rows["placed.jpg"]["time_zone"] == "America/Denver"
    assert rows["bare.jpg"]["place_city"] is None and rows["bare.jpg"]["time_zone"] is None
    assert "photos dated by their file" not in listing.stdout
    # The time as shot, with its offset, as the dashboard shows it (not UTC unsaid).
    assert rows["dated.jpg"]["captured_local"].startswith("2022-01-10T15:15:44")
    assert "2022-01-10 15:15:44 -04:00" in listing.stdout
    assert "captured (local)" in listing.stdout
    text = invoke("run", str(root)).stdout
    assert "2 photos dated by their file's time" in " ".join(text.split())
