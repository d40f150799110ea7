"""Errors of the media layer: each belongs to one file and carries a short human reason.

A crawl catches ``MediaError`` per file, records ``reason`` against that file and moves
on; anything else escaping a media function is a bug (or the attempt stopping, which
must propagate untouched).
"""

from __future__ import annotations

import re

# What varies from run to run, or file to file, in the text of one cause, and what it
# becomes (ADR 0057): a reason names the cause, so one cause is one reason, and the
# files it struck group under it across files and crawls.
_VARYING: tuple[tuple[re.Pattern[str], str], ...] = (
    # A descriptor reached through /proc or /dev/fd (a decode process reopens the
    # Worker's open original as /proc/PID/fd/N; ffmpeg reads /dev/fd/N).
    (re.compile(r"/proc/(?:\d+|self)/fd/\d+"), "/proc/PID/fd/N"),
    (re.compile(r"/dev/fd/\d+"), "/dev/fd/N"),
    # Python's reprs of an object (``<... object at 0x7f...>``) and of an open file
    # (``<_io.BufferedReader name=7>``).
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "0x..."),
    (re.compile(r"\bname=\d+"), "name=N"),
    # A name Python's tempfile made ("tmp" and eight random letters, digits or "_").
    # Other paths stay: a reason names no file, but an error of a root names its folder.
    (re.compile(r"\btmp[a-z0-9_]{8}\b"), "tmp..."),
    # A process id.
    (re.compile(r"\b(pid|PID|process id|process)([ =:#]+)\d+\b"), r"\1\2N"),
)


def plain_reason(text: str) -> str:
    """``text`` with what varies between runs of one cause (memory addresses, descriptor
    numbers, temporary names, process ids) made constant."""
    for pattern, constant in _VARYING:
        text = pattern.sub(constant, text)
    return text


class MediaError(Exception):
    """Base of every error about one file. ``reason`` is short, lower case, no path."""

    def __init__(self, reason: str) -> None:
        reason = plain_reason(reason)
        super().__init__(reason)
        self.reason = reason


class PathOutsideRoot(MediaError):
    """A path resolves (through ``..``, an absolute path or a symlink) outside its root."""


class EmptyFile(MediaError):
    """The file has zero bytes: there is nothing to hash, index or show."""

    def __init__(self, reason: str = "empty file (0 bytes)") -> None:
        super().__init__(reason)


class UnreadableFile(MediaError):
    """The file cannot be opened or read (permissions, I/O error, not a regular file)."""


class FileVanished(UnreadableFile):
    """The file disappeared between listing and reading; the next crawl will not see it."""

    def __init__(self, reason: str = "file vanished before it could be read") -> None:
        super().__init__(reason)


class FileChangedWhileHashing(MediaError):
    """Size, modification time or inode changed while the file was read: the hash
    describes no version of the file, so it must not be stored. Retry on a later crawl."""

    def __init__(self, reason: str = "file changed while it was being hashed") -> None:
        super().__init__(reason)


class UnsupportedMedia(MediaError):
    """The file is not a format this layer can read (or a tool it needs is missing)."""


class CorruptMedia(MediaError):
    """The file claims a supported format but its content is broken or truncated."""


class DecompressionBomb(MediaError):
    """The image declares more pixels than the policy allows to decode."""


class TooLargeToDecode(DecompressionBomb):
    """Decoding the image whole would take more memory than a decode process may use."""
