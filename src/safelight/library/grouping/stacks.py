"""Stacking a RAW with the photo of the same capture (ADR 0027): a camera set to RAW+JPEG
writes ``IMG_0001.CR2`` and ``IMG_0001.JPG``, one picture in two files, shown once with
the JPEG as its face and the RAW behind it, as Immich and PhotoPrism do.

Pure, unit-tested rules. The link is recorded on the RAW (``stack_primary_id`` names
its primary), as a Live Photo's on its image:

- A RAW (``mediatypes.is_raw``) and a photo that is no RAW, in the same folder with the
  same base name (case-insensitive), whose capture times are within a second (the
  instant or the wall clock, as ``livephotos`` compares them: either may be naive).
- Of several candidates, a JPEG first, then the nearest in time, then by path.
- Each RAW has at most one primary; a photo may be the primary of several RAWs
  (``IMG_0001.CR2`` and ``IMG_0001.DNG`` converted from it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Literal

from safelight.library.files.mediatypes import is_raw
from safelight.library.grouping.livephotos import MAX_GAP, Capture, capture_gap, stem_key

JPEG_SUFFIXES = frozenset({".jpg", ".jpeg", ".jpe"})

StackKind = Literal["raw", "format", "copy"]
"""What a stacked asset is to its primary (``assets.stack_kind``, migration 0021): a RAW
of the same capture (here), another format of it or a near-copy (``copies``)."""


def stack_raws(assets: Iterable[Capture]) -> dict[int, int]:
    """``{RAW id: primary id}`` for every RAW among ``assets`` shot with a photo."""
    images = [a for a in assets if a.media_type == "image"]
    primaries: dict[tuple[str, str], list[Capture]] = defaultdict(list)
    for image in images:
        if not is_raw(image.file_path):
            primaries[stem_key(image.file_path)].append(image)
    stacks: dict[int, int] = {}
    for raw in images:
        if not is_raw(raw.file_path):
            continue
        near = [
            p for p in primaries.get(stem_key(raw.file_path), ()) if capture_gap(raw, p) <= MAX_GAP
        ]
        if near:
            best = min(
                near,
                key=lambda p: (
                    PurePosixPath(p.file_path).suffix.lower() not in JPEG_SUFFIXES,
                    capture_gap(raw, p),
                    p.file_path,
                    p.id,
                ),
            )
            stacks[raw.id] = best.id
    return stacks
