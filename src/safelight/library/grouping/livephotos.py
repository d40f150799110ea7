"""Pairing Live Photos and motion photos: an image and the short video of the same capture.

Pure, unit-tested rules. The pair is recorded on the image (``paired_asset_id`` names
the video):

1. The same Apple content identifier on both (the image's MediaGroupUUID, the video's
   ``com.apple.quicktime.content.identifier``): the surest sign, used first.
2. Otherwise the same base name in the same folder (``IMG_0001.HEIC`` with
   ``IMG_0001.MOV``, case-insensitive) and capture times within a second. Both the
   instant and the wall-clock time are compared, because a photo without a UTC offset
   has its wall-clock time stored as UTC while its video knows the true instant. Two
   files that each carry a different content identifier are never paired by name.

An image pairs with at most one video (the nearest in time, then by path).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePosixPath

MAX_GAP = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class Capture:
    id: int
    file_path: str
    media_type: str
    captured_at: datetime
    captured_local: datetime
    content_identifier: str | None = None


def capture_gap(image: Capture, video: Capture) -> timedelta:
    """How far apart two captures are: the nearer of their instants and wall clocks."""
    return min(
        abs(image.captured_at - video.captured_at),
        abs(image.captured_local - video.captured_local),
    )


def _nearest(image: Capture, videos: Iterable[Capture]) -> Capture | None:
    ranked = sorted(videos, key=lambda v: (capture_gap(image, v), v.file_path, v.id))
    return ranked[0] if ranked else None


def stem_key(path: str) -> tuple[str, str]:
    """(folder, base name casefolded): what files of one capture share."""
    pure = PurePosixPath(path)
    return (str(pure.parent), pure.stem.casefold())


def pair_live_photos(assets: Iterable[Capture]) -> dict[int, int]:
    """``{image id: video id}`` for every Live Photo / motion photo among ``assets``."""
    images = [a for a in assets if a.media_type == "image"]
    videos = [a for a in assets if a.media_type == "video"]
    by_identifier: dict[str, list[Capture]] = defaultdict(list)
    by_stem: dict[tuple[str, str], list[Capture]] = defaultdict(list)
    for video in videos:
        if video.content_identifier:
            by_identifier[video.content_identifier].append(video)
        by_stem[stem_key(video.file_path)].append(video)
    pairs: dict[int, int] = {}
    for image in sorted(images, key=lambda i: (i.file_path, i.id)):
        match = None
        if image.content_identifier:
            match = _nearest(image, by_identifier.get(image.content_identifier, ()))
        if match is None:
            near = [
                v
                for v in by_stem.get(stem_key(image.file_path), ())
                if capture_gap(image, v) <= MAX_GAP
                and not (
                    image.content_identifier
                    and v.content_identifier
                    and image.content_identifier != v.content_identifier
                )
            ]
            match = _nearest(image, near)
        if match is not None:
            pairs[image.id] = match.id
    return pairs
