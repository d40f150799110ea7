"""Counted words as people write them: "1 file", "2 files", never "1 file(s)"."""

from __future__ import annotations


def plural(count: int, one: str, many: str | None = None) -> str:
    """``count`` and the phrase that agrees with it: ``one`` for exactly 1, else ``many``
    (by default ``one`` and an s). A phrase may carry its verb and pronoun along, as in
    ``plural(n, "photo dated by its file's time", "photos dated by their file's time")``.
    """
    return f"{count} {one if count == 1 else (many if many is not None else one + 's')}"


def listed(names: list[str], most: int = 5) -> str:
    """Names as a sentence lists them: ``Ana``, ``Grandma and Ana``, ``A, B and C``; past
    ``most``, the first ``most`` and how many more (``A, B, C, D, E and 2 more``)."""
    if len(names) > most:
        return f"{', '.join(names[:most])} and {len(names) - most} more"
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"
