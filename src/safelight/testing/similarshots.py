"""A library of similar shots for the tests of ADR 0066: reshoots of one scene seconds
apart (brighter, re-saved, slightly cropped, smaller), other scenes taken between them,
and the same scene again on another day, with what a correct grouping finds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from PIL import Image, ImageEnhance

from safelight.testing.captures import encoded, scene


@dataclass(frozen=True)
class SimilarLibrary:
    root: Path
    groups: frozenset[frozenset[str]]
    """The similar groups a grouping finds, as sets of paths."""
    primaries: frozenset[str]
    """Each group's first shot, the one its tile shows."""
    alone: frozenset[str]
    """Photos in no group: other scenes, and the first scene on another day."""


def _cropped(picture: Image.Image, share: float) -> Image.Image:
    width, height = picture.size
    dx, dy = round(width * share / 2), round(height * share / 2)
    return picture.crop((dx, dy, width - dx, height - dy)).resize(picture.size)


def _smaller(picture: Image.Image) -> Image.Image:
    return picture.resize((picture.width // 2, picture.height // 2), Image.Resampling.LANCZOS)


def similar_library(root: Path, start: datetime) -> SimilarLibrary:
    """Write the library under ``root``; its first shot is taken at ``start`` (naive: a
    camera's wall clock). Shots are 10 s or more apart, so no two make a burst, and
    their names share no base, so none is a copy of another (ADR 0056)."""
    shots: list[tuple[str, Image.Image, timedelta]] = [
        # Scene 0, four takes within a minute: one group.
        ("trip/DSC_0100.JPG", scene(0), timedelta(0)),
        (
            "trip/DSC_0101.JPG",
            ImageEnhance.Brightness(scene(0)).enhance(1.2),
            timedelta(seconds=15),
        ),
        ("trip/DSC_0103.JPG", _cropped(scene(0), 0.04), timedelta(seconds=40)),
        ("trip/DSC_0104.JPG", _smaller(scene(0)), timedelta(seconds=55)),
        # Another scene taken between them: alone.
        ("trip/DSC_0102.JPG", scene(3), timedelta(seconds=25)),
        # Scene 5, twice, an hour later: a second group.
        ("trip/DSC_0200.JPG", scene(5), timedelta(hours=1)),
        ("trip/DSC_0201.JPG", scene(5), timedelta(hours=1, seconds=30)),
        # Scene 0 again the next day: alike, but another moment, alone.
        ("next/DSC_0300.JPG", scene(0), timedelta(days=1)),
        # Scene 1 three minutes after scene 5: outside any window, alone.
        ("trip/DSC_0202.JPG", scene(1), timedelta(hours=1, minutes=3)),
    ]
    for relative, picture, offset in shots:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        quality = 60 if relative.endswith("0104.JPG") else 90
        path.write_bytes(encoded(picture, "JPEG", start + offset, quality=quality))
    first = frozenset(
        {"trip/DSC_0100.JPG", "trip/DSC_0101.JPG", "trip/DSC_0103.JPG", "trip/DSC_0104.JPG"}
    )
    second = frozenset({"trip/DSC_0200.JPG", "trip/DSC_0201.JPG"})
    grouped = first | second
    return SimilarLibrary(
        root=root,
        groups=frozenset({first, second}),
        primaries=frozenset({"trip/DSC_0100.JPG", "trip/DSC_0200.JPG"}),
        alone=frozenset(relative for relative, _, _ in shots if relative not in grouped),
    )
