"""Errors of the media layer: each belongs to one file and carries a short human reason.

A crawl catches ``MediaError`` per file, records ``reason`` against that file and moves
on; anything else escaping a media function is a bug (or the attempt stopping, which
must propagate untouched).
"""

from __future__ import annotations


class MediaError(Exception):
    """Base of every error about one file. ``reason`` is short, lower case, no path."""

    def __init__(self, reason: str) -> None:
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
