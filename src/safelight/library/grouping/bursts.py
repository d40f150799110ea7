"""Grouping a config's photos into bursts, and choosing each burst's primary.

Pure, except ``sharpness`` (which reads one small thumbnail), so the rules are unit-tested
on plain values:

- A maker's burst id (Apple's BurstUUID) groups the photos that carry it.
- Without one, photos of one camera (make and model) whose capture times are at most
  one second apart, one after the other, form a run; a run of two or more is a burst.
  Only capture times read from the photo's own metadata count: a time taken from the
  file's mtime says when the file was copied, and a folder copied at once would become
  one huge "burst".
- A burst is distinct frames (ADR 0056): a photo taken at the very same instant as one
  already in the run (the same sub-second, or the same second where the camera writes
  none) joins it only if its content is known to differ (``fingerprints``). Files of
  one capture are stacked instead (``copies``) and never reach this function; what
  still looks like one is left alone rather than made a "burst".
- A burst's key derives only from what groups it (the maker id, or the camera and the
  run's first capture time), so a rerun over the same photos finds the same bursts.
- The primary is the sharpest member by the variance of a Laplacian of its thumbnail
  (blur lowers it); members without a readable thumbnail do not compete; with no
  measure at all, the first member in capture order.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from PIL import Image, ImageFilter, ImageStat

from safelight.library.grouping.fingerprints import same_content
from safelight.library.render.images import PROXY_FORMAT

MAX_GAP = timedelta(seconds=1)
"""The longest pause between two shots of one derived burst."""

MIN_BURST_SIZE = 2

SHARPNESS_MAX_PIXELS = 4_000_000
"""A thumbnail is a few hundred pixels wide; anything far larger is not one of ours."""


@dataclass(frozen=True, slots=True)
class Photo:
    id: int
    file_path: str
    captured_at: datetime
    captured_at_source: str
    camera_make: str | None = None
    camera_model: str | None = None
    maker_burst_id: str | None = None
    sequence_number: int | None = None


@dataclass(frozen=True, slots=True)
class Burst:
    key: str
    asset_ids: tuple[int, ...]
    """Members in capture order."""


def _order(photo: Photo) -> tuple[datetime, int, str, int]:
    return (photo.captured_at, photo.sequence_number or 0, photo.file_path, photo.id)


def group_bursts(
    photos: Iterable[Photo], fingerprints: Mapping[int, int] | None = None
) -> list[Burst]:
    """The bursts among ``photos``, ordered by key; each photo is in at most one.
    ``fingerprints``: what the photos show (``fingerprints.fingerprint``), by id."""
    prints = fingerprints or {}
    by_maker: dict[str, list[Photo]] = defaultdict(list)
    by_camera: dict[tuple[str, str], list[Photo]] = defaultdict(list)
    for photo in photos:
        if photo.maker_burst_id:
            by_maker[photo.maker_burst_id].append(photo)
        elif photo.captured_at_source == "exif" and (photo.camera_make or photo.camera_model):
            by_camera[(photo.camera_make or "", photo.camera_model or "")].append(photo)
    bursts: list[Burst] = []
    for maker_id, members in by_maker.items():
        if len(members) >= MIN_BURST_SIZE:
            ordered = sorted(members, key=_order)
            bursts.append(Burst(f"maker:{maker_id}", tuple(p.id for p in ordered)))
    for (make, model), members in by_camera.items():
        ordered = sorted(members, key=_order)
        run: list[Photo] = []
        for photo in ordered:
            if run and photo.captured_at - run[-1].captured_at > MAX_GAP:
                bursts.extend(_derived(make, model, run))
                run = []
            if not _repeats(run, photo, prints):
                run.append(photo)
        bursts.extend(_derived(make, model, run))
    bursts.sort(key=lambda b: b.key)
    return bursts


def _repeats(run: list[Photo], photo: Photo, fingerprints: Mapping[int, int]) -> bool:
    """Whether ``photo`` cannot be told apart, as a frame, from one already in the run:
    the same instant and content not known to differ. The run is in capture order, so
    the photos of its last instant are at its end."""
    for member in reversed(run):
        if member.captured_at != photo.captured_at:
            return False
        if same_content(fingerprints.get(member.id), fingerprints.get(photo.id)) is not False:
            return True
    return False


def _derived(make: str, model: str, run: list[Photo]) -> list[Burst]:
    if len(run) < MIN_BURST_SIZE:
        return []
    first = run[0].captured_at.isoformat()
    return [Burst(f"camera:{make}|{model}|{first}", tuple(p.id for p in run))]


def choose_primary(burst: Burst, sharpness: Mapping[int, float | None]) -> int:
    """The sharpest member; on a tie or with no measure, the earliest in capture order."""
    best: int | None = None
    best_score = float("-inf")
    for asset_id in burst.asset_ids:
        score = sharpness.get(asset_id)
        if score is not None and score > best_score:
            best, best_score = asset_id, score
    return best if best is not None else burst.asset_ids[0]


def sharpness(thumbnail: Path) -> float | None:
    """Variance of a 3x3 Laplacian of the grey image: higher is sharper. None if unreadable.

    Blocking (file read and decode): run it in a thread.
    """
    laplacian = ImageFilter.Kernel((3, 3), (0, 1, 0, 1, -4, 1, 0, 1, 0), scale=1, offset=128)
    try:
        with Image.open(os.fspath(thumbnail), formats=(PROXY_FORMAT,)) as image:
            if image.width * image.height > SHARPNESS_MAX_PIXELS:
                return None
            grey = image.convert("L")
        edges = grey.filter(laplacian)
        return float(ImageStat.Stat(edges).var[0])
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
