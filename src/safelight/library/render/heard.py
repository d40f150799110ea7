"""What a decoder says about a file it reads (Pillow's warnings, a codec's lines on
stderr, ffmpeg's error lines of a run that succeeded) goes to the Worker's log, a record
a line, with the file's name: never to the terminal as bare lines (ADR 0057)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

HEARD_LIMIT = 20
"""At most this many lines a decoder said are logged per file (the rest are counted)."""

log = logging.getLogger("safelight.decode")


def tell_heard(about: str | None, heard: Sequence[str]) -> None:
    """Log what a decoder said about a file (``about``: its name; None: "a photo")."""
    name = about if about is not None else "a photo"
    for line in heard[:HEARD_LIMIT]:
        log.warning("decoding %s: %s", name, line)
    if len(heard) > HEARD_LIMIT:
        log.warning("decoding %s: %d more lines not logged", name, len(heard) - HEARD_LIMIT)


def said_lines(text: bytes) -> list[str]:
    """The lines of what a decoder wrote, stripped, empty ones left out."""
    return [line.strip() for line in text.decode("utf-8", "replace").splitlines() if line.strip()]
