"""Forwards to :mod:`safelight.testing.items` for the fault rig (``tests/faults``), whose
imports its owner switches; nothing else imports this (ADR 0051). Delete it then."""

from safelight.testing.items import running_item, scope_of

__all__ = ["running_item", "scope_of"]
