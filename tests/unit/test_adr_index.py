"""docs/adr/README.md lists every ADR with the title and status its own file gives."""

from __future__ import annotations

import re
from pathlib import Path

_ADR = Path(__file__).resolve().parents[2] / "docs" / "adr"
_ROW = re.compile(r"^\| \[(\d{4})\]\((\S+\.md)\) \| (.+) \| (.+) \|$")


def _records() -> list[tuple[str, str, str, str]]:
    """(number, file, title, status) of each ADR file, from its first lines."""
    records = []
    for path in sorted(_ADR.glob("[0-9][0-9][0-9][0-9]-*.md")):
        lines = path.read_text("utf-8").splitlines()
        heading = re.fullmatch(r"# ADR (\d{4}): (.+)", lines[0])
        assert heading is not None, f"{path.name} does not begin with '# ADR NNNN: title'"
        assert path.name.startswith(heading[1]), f"{path.name} is numbered {heading[1]}"
        status = next((line for line in lines if line.startswith("- Status: ")), None)
        assert status is not None, f"{path.name} has no '- Status:' line"
        records.append((heading[1], path.name, heading[2], status.removeprefix("- Status: ")))
    return records


def test_the_index_lists_each_adr_once_with_its_title_and_status() -> None:
    index = (_ADR / "README.md").read_text("utf-8").splitlines()
    listed = [match.groups() for line in index if (match := _ROW.match(line))]
    assert [tuple(row) for row in listed] == _records()
