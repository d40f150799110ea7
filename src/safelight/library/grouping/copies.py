"""Stacking the files of one capture that are not RAWs (ADR 0056): a JPEG and its WebP
or HEIC export (``format``), an edited or duplicated copy beside its original or a
copy with other bytes in another folder (``copy``). Shown once, with the original as
its face, as a RAW is behind its JPEG (``stacks``, ADR 0027); never a "burst".

Pure, unit-tested rules; ``fingerprints`` says whether two thumbnails show the same
picture (None: unknown). Two photos are one capture when:

1. **Their names say so**: the same folder and the same base name once copy marks are
   taken off (``IMG_0001 (1)``, ``IMG_0001-edited``, ``IMG_0001 copy``, ``Copy of
   IMG_0001``, Apple's ``IMG_E0001``), their content not known to differ, and their
   capture times within a second, or, where one is dated only by its file (an export
   that dropped its EXIF), their content the same. A marked copy that looks like
   none of them (an edit: cropped, filtered) joins the unmarked file of its name taken
   within a second of it that would be the primary: its original.
2. **Their moment says so**: the same camera (make and model) and the same capture time
   to the sub-second, read from the photo itself (not the file's time), the same
   content, and either another folder or another format. In one folder and one format,
   two such files with unrelated names are left alone: a camera numbered them as two
   frames.

Each group's primary is the original: a name without copy marks, then a camera's own
format (JPEG, then HEIF) over an export, then a photo dated by itself over one dated
by its file, then by path. A member is ``format`` when it is unmarked and of another
format than the primary, else ``copy``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import PurePosixPath

from safelight.library.grouping.fingerprints import same_content
from safelight.library.grouping.stacks import JPEG_SUFFIXES, StackKind

MAX_GAP = timedelta(seconds=1)
"""Capture times of two files of one shot, read from the same camera's EXIF: equal, or
within a second where an editor rounded or dropped the sub-seconds."""

FILE_DATED = frozenset({"file", "modified", "png"})
"""Capture-time sources that say when a file was written, not when it was shot."""

HEIF_SUFFIXES = frozenset({".heic", ".heif", ".hif"})

MAX_GROUP = 32
"""The most files one name or one instant may gather and still be asked about. More is
not one capture saved again but something else: a camera whose clock was never set
stamps every photo with one time, a browser names a thousand downloads "image (N)".
Left alone, they cost no thumbnail reads and no pairwise comparisons."""

_COPY_MARKS = (
    re.compile(r"\s*\(\d{1,3}\)$"),  # "IMG_0001 (1)", "IMG_0001(2)": browsers, Windows
    re.compile(r"\s*[-_ ]\s*copy(\s*\d{0,3})?$", re.IGNORECASE),  # "IMG_0001 - Copy"
    re.compile(r"[-_ ](edited|edit)$", re.IGNORECASE),  # Google Photos, editors
    re.compile(r"^copy of\s+", re.IGNORECASE),  # "Copy of IMG_0001"
)
_APPLE_EDITED = re.compile(r"^(IMG_)E(\d{4,})$", re.IGNORECASE)
"""An iPhone's export of an edited photo: ``IMG_E0001`` beside ``IMG_0001``."""


@dataclass(frozen=True, slots=True)
class Shot:
    id: int
    file_path: str
    captured_at: datetime
    captured_at_source: str
    camera_make: str | None = None
    camera_model: str | None = None


@dataclass(frozen=True, slots=True)
class Stacked:
    primary_id: int
    kind: StackKind


def base_name(stem: str) -> tuple[str, bool]:
    """A file name's stem without its copy marks, casefolded, and whether it had any."""
    marked = False
    name = stem.strip()
    apple = _APPLE_EDITED.match(name)
    if apple:
        name, marked = apple.group(1) + apple.group(2), True
    changed = True
    while changed:
        changed = False
        for mark in _COPY_MARKS:
            stripped = mark.sub("", name)
            if stripped and stripped != name:
                name, marked, changed = stripped, True, True
    return name.casefold(), marked


def format_family(path: str) -> str:
    """The format a name says, with its spellings made one (``.jpeg`` is ``.jpg``)."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in JPEG_SUFFIXES:
        return ".jpg"
    if suffix in HEIF_SUFFIXES:
        return ".heic"
    return ".tiff" if suffix == ".tif" else suffix


def _folder(shot: Shot) -> str:
    return str(PurePosixPath(shot.file_path).parent)


def _marked(shot: Shot) -> bool:
    return base_name(PurePosixPath(shot.file_path).stem)[1]


def _name_families(shots: Iterable[Shot]) -> list[list[Shot]]:
    families: dict[tuple[str, str], list[Shot]] = defaultdict(list)
    for shot in shots:
        families[(_folder(shot), base_name(PurePosixPath(shot.file_path).stem)[0])].append(shot)
    return [members for members in families.values() if 1 < len(members) <= MAX_GROUP]


def _moments(shots: Iterable[Shot]) -> list[list[Shot]]:
    moments: dict[tuple[str, str, datetime], list[Shot]] = defaultdict(list)
    for shot in shots:
        if shot.captured_at_source in FILE_DATED or not (shot.camera_make or shot.camera_model):
            continue
        key = (shot.camera_make or "", shot.camera_model or "", shot.captured_at)
        moments[key].append(shot)
    return [members for members in moments.values() if 1 < len(members) <= MAX_GROUP]


def fingerprints_wanted(shots: Iterable[Shot]) -> set[int]:
    """The shots whose content the rules may ask about: those that share a base name in
    their folder, or their camera and capture time, with another."""
    listed = list(shots)
    return {s.id for group in (*_name_families(listed), *_moments(listed)) for s in group}


def _near(a: Shot, b: Shot) -> bool:
    return abs(a.captured_at - b.captured_at) <= MAX_GAP


def _one_capture_by_name(a: Shot, b: Shot, fingerprints: Mapping[int, int]) -> bool:
    same = same_content(fingerprints.get(a.id), fingerprints.get(b.id))
    if same is False:
        return False
    if _near(a, b):
        return True
    # Far apart: only a file that does not know when it was shot (an export that
    # dropped its EXIF) may still be the same picture; two photos that each say when
    # they were taken, seconds apart, are two shots (two cameras' IMG_0001 in one folder).
    dated_by_file = a.captured_at_source in FILE_DATED or b.captured_at_source in FILE_DATED
    return bool(same) and dated_by_file


def _original_of(copy: Shot, family: list[Shot]) -> Shot | None:
    """The file an edited copy that looks like nothing else of its name was made from:
    of the unmarked files of its name taken within a second of it, the first as a
    primary is chosen."""
    originals = [s for s in family if not _marked(s) and _near(s, copy)]
    return min(originals, key=_primary_order) if originals else None


def _one_capture_by_moment(a: Shot, b: Shot, fingerprints: Mapping[int, int]) -> bool:
    if _folder(a) == _folder(b) and format_family(a.file_path) == format_family(b.file_path):
        return False
    return same_content(fingerprints.get(a.id), fingerprints.get(b.id)) is True


def _primary_order(shot: Shot) -> tuple[bool, int, bool, str, int]:
    family = format_family(shot.file_path)
    rank = 0 if family == ".jpg" else 1 if family == ".heic" else 2
    return (_marked(shot), rank, shot.captured_at_source in FILE_DATED, shot.file_path, shot.id)


def stack_copies(shots: Iterable[Shot], fingerprints: Mapping[int, int]) -> dict[int, Stacked]:
    """``{id: Stacked(primary, kind)}`` for every shot that is another file of a capture
    among ``shots`` (photos, no RAWs); primaries are not in it."""
    listed = sorted(shots, key=lambda s: (s.file_path, s.id))
    parent = {s.id: s.id for s in listed}

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    def link(a: Shot, b: Shot) -> None:
        parent[root(a.id)] = root(b.id)

    families = _name_families(listed)
    for named in families:
        for a, b in combinations(named, 2):
            if _one_capture_by_name(a, b, fingerprints):
                link(a, b)
    # An edited copy may look other than its original (cropped, filtered): its name
    # and time tie it to the original alone, never to what only resembles the edit.
    for named in families:
        alone = [
            s
            for s in named
            if _marked(s) and all(root(o.id) != root(s.id) for o in named if o is not s)
        ]
        for copy in alone:
            original = _original_of(copy, named)
            if original is not None:
                link(copy, original)
    for moment in _moments(listed):
        for a, b in combinations(moment, 2):
            if _one_capture_by_moment(a, b, fingerprints):
                link(a, b)
    groups: dict[int, list[Shot]] = defaultdict(list)
    for shot in listed:
        groups[root(shot.id)].append(shot)
    stacked: dict[int, Stacked] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        primary = min(members, key=_primary_order)
        family = format_family(primary.file_path)
        for member in members:
            if member is primary:
                continue
            other_format = format_family(member.file_path) != family
            kind: StackKind = "format" if other_format and not _marked(member) else "copy"
            stacked[member.id] = Stacked(primary.id, kind)
    return stacked


def all_stacks(raws: Mapping[int, int], copies: Mapping[int, Stacked]) -> dict[int, Stacked]:
    """The RAW stacks (``stacks.stack_raws``) and the copies as one map; a RAW whose
    photo is itself another file of a capture is stacked on that capture's primary, so
    no stack points at a stacked asset."""
    merged = dict(copies)
    for raw, photo in raws.items():
        target = copies.get(photo)
        merged[raw] = Stacked(target.primary_id if target else photo, "raw")
    return merged
