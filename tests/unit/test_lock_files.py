"""requirements/*.lock, which scripts/setup installs with --require-hashes: every
package pinned with its hashes, pyproject.toml's pins in them as written, the dev lock
holding the faces one's pins unchanged and that the runtime one's (a dev install serves
faces and runtime too), and no
development tool in what a user installs. scripts/lock writes them (CONTRIBUTING.md)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)$")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(specs: list[str]) -> dict[str, str]:
    """name -> version of pyproject-style requirements, each of which must be ``==``."""
    found = {}
    for spec in specs:
        match = _PIN.match(spec.replace(" ", ""))
        assert match is not None, f"{spec!r} is not pinned exactly"
        found[normalized(match[1])] = match[2]
    return found


def lock(name: str) -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (version, hashes) of requirements/NAME.lock."""
    text = (ROOT / "requirements" / f"{name}.lock").read_text("utf-8")
    entries: dict[str, tuple[str, frozenset[str]]] = {}
    for line in re.sub(r"\\\n", " ", text).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        assert not line.startswith("-"), f"{name}.lock: an option line: {line!r}"
        requirement, *options = line.split()
        match = _PIN.match(requirement)
        assert match is not None, f"{name}.lock: {requirement!r} is not pinned with =="
        hashes = frozenset(o.removeprefix("--hash=") for o in options)
        assert hashes, f"{name}.lock: {requirement} has no hash"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), requirement
        assert normalized(match[1]) not in entries, f"{name}.lock: {match[1]} twice"
        entries[normalized(match[1])] = (match[2], hashes)
    return entries


RUNTIME = pins(PROJECT["project"]["dependencies"]) | pins(PROJECT["build-system"]["requires"])
FACES = RUNTIME | pins(PROJECT["project"]["optional-dependencies"]["faces"])
DEV = FACES | pins(PROJECT["project"]["optional-dependencies"]["dev"])


@pytest.mark.parametrize(("name", "wanted"), [("runtime", RUNTIME), ("faces", FACES), ("dev", DEV)])
def test_each_lock_pins_pyprojects_packages_as_written(name: str, wanted: dict[str, str]) -> None:
    locked = lock(name)
    assert {package: locked.get(package, ("missing",))[0] for package in wanted} == wanted


@pytest.mark.parametrize(("lower", "upper"), [("runtime", "faces"), ("faces", "dev")])
def test_each_lock_holds_the_pins_and_hashes_of_the_one_below_unchanged(
    lower: str, upper: str
) -> None:
    """A dev install serves faces and runtime too, a faces install runtime."""
    below, above = lock(lower), lock(upper)
    assert {package: above.get(package) for package in below} == below


def test_no_development_tool_is_in_what_a_user_installs() -> None:
    tools = set(pins(PROJECT["project"]["optional-dependencies"]["dev"]))
    assert tools, "the dev extra lists the tools"
    assert not tools & set(lock("runtime"))
    assert not tools & set(lock("faces"))


def test_the_locks_name_no_index_or_machine() -> None:
    """An index or wheel folder of the machine that compiled them must not be baked in."""
    for name in ("runtime", "faces", "dev"):
        text = (ROOT / "requirements" / f"{name}.lock").read_text("utf-8")
        assert not re.search(r"--(extra-)?index-url|--find-links|file://|https?://", text), name
