"""Forwards to :mod:`safelight.testing.specs` for the fault rig (``tests/faults``), whose
imports its owner switches; nothing else imports this (ADR 0051). Delete it then."""

from safelight.testing.specs import DEFAULT_SPEC

__all__ = ["DEFAULT_SPEC"]
