"""How commands print: rich tables for people, one ``json.dumps`` for scripts.

With ``--json`` a command prints exactly one JSON document on stdout and nothing else;
UUIDs, datetimes, paths and enums become strings. Text a user, a library or the database
wrote (file names, error messages, paths) is printed masked, as rich ``Text`` (never read
as markup), with what a terminal would act on escaped (:mod:`safelight.terminal`); the
JSON document says the same in ``\\uXXXX`` escapes, so it stays exact.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from safelight.logs import masker
from safelight.terminal import first_line, json_text, printable
from safelight.views.documents import json_default


def to_json(document: Any) -> str:
    dumped = json.dumps(document, default=json_default, ensure_ascii=False, indent=2)
    return json_text(masker.mask(dumped))


def print_json(document: Any) -> None:
    sys.stdout.write(to_json(document) + "\n")
    sys.stdout.flush()


def console(*, stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr); made per command, so a test runner's
    swapped streams are the ones written to. Not a terminal: no colour, wide lines.
    No markup: a plain string printed on it shows as it is, brackets and all."""
    stream = sys.stderr if stderr else sys.stdout
    terminal = stream.isatty()
    return Console(
        file=stream,
        highlight=False,
        markup=False,
        soft_wrap=not terminal,
        width=None if terminal else 200,
    )


def print_trimmed(console: Console, renderable: RenderableType) -> None:
    """Print ``renderable`` with no trailing spaces: a grid pads each cell to its
    column's width, so every line of a summary would reach its longest line (200
    columns in a log file)."""
    out: list[Segment] = []
    for line in console.render_lines(renderable, console.options, pad=False):
        while line and not line[-1].control and not line[-1].text.rstrip():
            line.pop()
        if line and not line[-1].control:
            last = line[-1]
            line[-1] = Segment(last.text.rstrip(), last.style, last.control)
        out += [*line, Segment.line()]
    console.print(Segments(out), end="", soft_wrap=True)


def safe_text(value: Any, style: str = "") -> Text:
    """``value`` as text for a person: masked, escaped for the terminal, never markup."""
    return Text(printable(masker.mask(str(value))), style=style)


def cell(value: Any) -> Text:
    """A table cell: empty for None, dates to the second in local ISO form, else
    :func:`safe_text`."""
    if value is None:
        return Text("")
    if isinstance(value, datetime):
        return Text(value.astimezone().strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, enum.Enum):
        return Text(str(value.value))
    return safe_text(value)


def short_id(value: UUID | None) -> str:
    """The first eight characters of a config id: enough to tell configs apart, and
    accepted back by every ``--config`` option."""
    return "" if value is None else str(value)[:8]


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    empty: str = "nothing to show",
) -> Table | Text:
    built = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in columns:
        built.add_column(name, overflow="fold")
    count = 0
    for row in rows:
        built.add_row(*(cell(v) for v in row))
        count += 1
    if count == 0:
        return Text(f"{title}: {empty}" if title else empty)
    return built


def key_values(pairs: Mapping[str, Any]) -> Table:
    """A two-column table of labelled values, for one record."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for key, value in pairs.items():
        grid.add_row(key, cell(value))
    return grid


def truncate(text: str | None, limit: int = 80) -> str | None:
    if text is None:
        return None
    first = first_line(text)
    return first if len(first) <= limit else first[: limit - 1] + "…"
