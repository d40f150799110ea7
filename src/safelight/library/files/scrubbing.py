"""One original read again by the scrub (ADR 0062): is its content still the one its
asset recorded?

The original is opened as the crawl opens it (``originals.StorageRoot``: beneath the
root, through no link, read-only) and hashed as the crawl hashes it (``hashing``), from
that one descriptor. What the read finds is one of:

- the file is gone (the crawl deals with files that went: not counted as rot);
- its size or modification time (ns) is not the recorded one, before or during the
  read: it was edited, which the crawl sees and reads again (not rot either);
- same size and time, same hash: intact;
- same size and time, another hash: its bytes changed under a size and time that did
  not, which no editor does (it writes the time) and bit rot or tampering does.

The asset does not record the file's inode, so a file replaced by one of the same size
and time (a copy with ``cp -p``) holds the same bytes or shows as changed, which is
what it is to the library.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from safelight.library.files.errors import FileChangedWhileHashing, FileVanished, MediaError
from safelight.library.files.hashing import hash_descriptor
from safelight.library.files.originals import StorageRoot


class Found(Enum):
    INTACT = "intact"
    CHANGED = "changed"
    """Another content under the recorded size and time: bit rot or tampering."""
    EDITED = "edited"
    """The size or time is not the recorded one: the crawl's to read again."""
    MISSING = "missing"
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the asset says of its file."""

    relative: str
    content_hash: str
    size_bytes: int
    modified_ns: int


@dataclass(frozen=True, slots=True)
class Reread:
    found: Found
    content_hash: str | None = None
    """The hash the bytes have now (``INTACT`` and ``CHANGED``)."""
    bytes_read: int = 0
    reason: str | None = None
    """Why it could not be read (``UNREADABLE``)."""


def reread(storage: StorageRoot, recorded: Recorded, ensure_alive: Callable[[], None]) -> Reread:
    """Read ``recorded``'s file again, whole, and say what it holds now.

    ``ensure_alive`` runs before every chunk: what it raises propagates, so an attempt
    told to stop stops within a chunk."""
    try:
        original = storage.open(recorded.relative)
    except FileVanished:
        return Reread(Found.MISSING)
    except MediaError as error:
        return Reread(Found.UNREADABLE, reason=error.reason)
    with original:
        st = os.fstat(original.fd)
        if (st.st_size, st.st_mtime_ns) != (recorded.size_bytes, recorded.modified_ns):
            return Reread(Found.EDITED)
        try:
            hashed = hash_descriptor(original.fd, ensure_alive=ensure_alive)
        except FileChangedWhileHashing:
            return Reread(Found.EDITED, bytes_read=st.st_size)
        except MediaError as error:
            return Reread(Found.UNREADABLE, reason=error.reason)
    found = Found.INTACT if hashed.content_hash == recorded.content_hash else Found.CHANGED
    return Reread(found, content_hash=hashed.content_hash, bytes_read=hashed.size)
