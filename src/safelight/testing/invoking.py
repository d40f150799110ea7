"""The type of the acceptance tests' ``invoke`` fixture (``tests/acceptance/conftest.py``):
a command of ``safelight`` run in this process, its result."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result

Invoke = Callable[..., Result]
"""``invoke("items", "--json", env={...}, input="...")``."""
