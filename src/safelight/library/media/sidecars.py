"""XMP sidecars: which ``.xmp`` beside a photo is its sidecar, and what it says.

A sidecar is where digiKam, darktable and Lightroom write the user's corrections (a
fixed date, a zone, a rotation) beside an original they do not rewrite. It is never an
asset (``mediatypes`` knows no ``.xmp``) nor an unsupported file, and never followed
when it is a symbolic link (the walk reports the link like any other); one that cannot
be read when its photo is (``read_sidecar``) is the crawl's error, its photo read as if
it had none.

The pairing rule (``sidecar_for``), in the photo's own folder, names compared without
regard to case: ``IMG_1.JPG.xmp`` (darktable, digiKam) first, then ``IMG_1.xmp``
(Lightroom, Capture One). One ``IMG_1.xmp`` beside ``IMG_1.CR2`` and ``IMG_1.JPG`` is
the sidecar of both, as those editors read it.

What it says (``sidecar_facts``, ADR 0026 decision 6): its capture time, the XMP dates
in the order of ``capturetime.XMP_DATES``, with a zone borrowed from another of its
dates of the same wall-clock second (source ``"sidecar"``), and its
``tiff:Orientation`` (1-8). Both win over what the photo embeds; the orientation goes
through ``metadata.orientation_of``, the one rule the proxies follow too.

How it is read (``read_sidecar``): opened like an original (beneath the root, no link
followed, read-only, bounded), and stat'ed on the open file before it is read. The
asset stores the ``SidecarFile`` that was read (path, size, mtime), which the crawl's
unchanged check compares with the one the walk pairs next time
(``decisions.by_stat``): a sidecar added, changed, swapped or removed re-reads its
photo in place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from safelight.library.files.confinement import describe_os_error
from safelight.library.files.errors import FileVanished, MediaError
from safelight.library.files.originals import StorageRoot
from safelight.library.media.capturetime import XMP_DATES, CaptureTime, with_zone
from safelight.library.media.xmp import (
    NS_TIFF,
    XMP_MAX_BYTES,
    XmpProperties,
    parse_xmp,
    parse_xmp_date,
)

SIDECAR_SUFFIX = ".xmp"


def is_sidecar_name(name: str) -> bool:
    """True for a name the walk keeps as a possible sidecar (``*.xmp``, any case)."""
    return name.lower().endswith(SIDECAR_SUFFIX) and len(name) > len(SIDECAR_SUFFIX)


@dataclass(frozen=True, slots=True)
class SidecarFile:
    """One version of a sidecar, as the walk lists it and as the asset stores it: equal
    means the same sidecar, unchanged (one at another path is another sidecar)."""

    path: str
    """Relative to the root, ``/``-separated, in the same folder as its photo."""
    size: int
    mtime_ns: int


def sidecar_for(photo_name: str, sidecars: Mapping[str, SidecarFile]) -> SidecarFile | None:
    """The sidecar of the photo named ``photo_name`` among its folder's ``.xmp`` files,
    ``sidecars`` keyed by their lower-cased names: ``name.ext.xmp``, then ``name.xmp``."""
    full = (photo_name + SIDECAR_SUFFIX).lower()
    if full in sidecars:
        return sidecars[full]
    stem = PurePosixPath(photo_name).stem
    if not stem:
        return None
    return sidecars.get((stem + SIDECAR_SUFFIX).lower())


@dataclass(frozen=True, slots=True)
class SidecarFacts:
    """What a sidecar says that wins over the photo's own metadata."""

    captured: CaptureTime | None = None
    orientation: int | None = None
    """1-8, or None when the sidecar has none (or one out of range)."""


NO_FACTS = SidecarFacts()


def sidecar_facts(data: bytes) -> SidecarFacts:
    """The facts of a sidecar's bytes; ``NO_FACTS`` for one that is not well-formed XMP,
    or more than ``XMP_MAX_BYTES`` (``parse_xmp`` parses none larger)."""
    return facts_of(parse_xmp(data))


def facts_of(xmp: XmpProperties) -> SidecarFacts:
    dates = [d for name in XMP_DATES if (d := parse_xmp_date(xmp.get(*name))) is not None]
    captured = CaptureTime(with_zone(dates[0], dates[1:]), "sidecar") if dates else None
    text = (xmp.get(NS_TIFF, "Orientation") or "").strip()
    orientation = int(text) if text.isdigit() and 1 <= int(text) <= 8 else None
    return SidecarFacts(captured, orientation)


@dataclass(frozen=True, slots=True)
class ReadSidecar:
    """What reading a photo's sidecar gave."""

    file: SidecarFile | None
    """The version read (its stat taken on the open file, before reading it), which the
    asset stores; None when none was read."""
    facts: SidecarFacts
    refused: str | None = None
    """Why the walk's sidecar could not be read (a link swapped in, unreadable): to
    report. One gone since the walk is as if there were none, and is not reported."""


NONE_READ = ReadSidecar(None, NO_FACTS)


def read_sidecar(storage: StorageRoot, sidecar: SidecarFile | None) -> ReadSidecar:
    """Open and read ``sidecar`` (blocking: a thread) beneath ``storage``'s root, no link
    followed, at most ``XMP_MAX_BYTES`` (and one byte more, to see that it is more)."""
    if sidecar is None:
        return NONE_READ
    try:
        with storage.open(sidecar.path) as opened:
            st = os.fstat(opened.fd)
            data = os.pread(opened.fd, XMP_MAX_BYTES + 1, 0)
    except FileVanished:
        return NONE_READ
    except MediaError as error:
        return ReadSidecar(None, NO_FACTS, error.reason)
    except OSError as error:
        return ReadSidecar(None, NO_FACTS, describe_os_error(error))
    return ReadSidecar(SidecarFile(sidecar.path, st.st_size, st.st_mtime_ns), sidecar_facts(data))
