"""Counted words as people write them: "1 file", "2 files", never "1 file(s)"."""

from __future__ import annotations


def plural(count: int, one: str, many: str | None = None) -> str:
    """``count`` and the phrase that agrees with it: ``one`` for exactly 1, else ``many``
    (by default ``one`` and an s). A phrase may carry its verb and pronoun along, as in
    ``plural(n, "photo dated by its file's time", "photos dated by their file's time")``.
    """
    return f"{count} {one if count == 1 else (many if many is not None else one + 's')}"
