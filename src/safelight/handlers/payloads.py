"""What a kind's payload may hold: one pydantic model per kind (ADR 0023).

A payload is JSON, stored as ``jsonb``, so it is checked as JSON: strictly (``"2"`` is
not a number, ``true`` is not 1), with no key the model does not declare, and with no
value JSON cannot hold (NaN, infinities, a Python object). The same check runs twice:
when an item is queued (the store's ``KindSpec.check_payload``, so a payload that does
not fit is refused with nothing written), and when a Worker binds the handler (so an
item queued before the check, or written by hand, fails with one line). The handler
gets the checked model and reads its fields from there.

A payload nests at most ``MAX_PAYLOAD_DEPTH`` levels of arrays and objects, checked
before anything recursive (the JSON parser, pydantic, psycopg, PostgreSQL) sees it: a
payload 20,000 levels deep would exhaust Python's recursion there, an "internal error"
instead of the user's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

__all__ = [
    "MAX_PAYLOAD_DEPTH",
    "NoPayload",
    "Payload",
    "PayloadRejected",
    "json_text_too_deep",
    "parse_payload",
]

MAX_PAYLOAD_DEPTH = 32
"""Levels of arrays and objects a payload may nest (``{}`` is one). Every kind's payload
is flat or nearly so; a noop's ``result`` is the deepest a user writes."""
TOO_DEEP = f"payload is nested more than {MAX_PAYLOAD_DEPTH} levels deep"

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")

# json.dumps(..., allow_nan=False), made once: dumps makes an encoder on every call
# given any option.
_JSON = json.JSONEncoder(allow_nan=False)

_SHOWN_INPUT = 40
"""At most this many characters of a refused value are quoted in the message."""


class Payload(BaseModel):
    """The base of every kind's payload model: strict JSON, no undeclared key, frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoPayload(Payload):
    """The payload of a kind that takes none: ``{}``."""


P = TypeVar("P", bound=Payload)


class PayloadRejected(ValueError):
    """A payload that does not fit its kind's model; the message is one line naming the
    field (``payload field "seconds": expected a number, got "abc"``)."""


def json_text_too_deep(text: str) -> bool:
    """Whether the JSON ``text`` nests deeper than ``MAX_PAYLOAD_DEPTH``: read before it
    is parsed, without recursion (brackets inside strings do not count)."""
    depth = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_PAYLOAD_DEPTH:
            return True
    return False


def _too_deep(payload: Mapping[str, Any]) -> bool:
    """Whether ``payload`` nests deeper than ``MAX_PAYLOAD_DEPTH``: depth first, without
    recursion, each container visited once (a flat payload costs a Worker next to
    nothing: docs/benchmarks.md, section 18)."""
    # (a container, its level): the payload's own level is 1, so it starts as the child
    # of a list at level 0, and is checked for being a container as every value is.
    stack: list[tuple[Any, int]] = [([payload], 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_PAYLOAD_DEPTH:
            return True
        for child in value.values() if isinstance(value, Mapping) else value:
            if isinstance(child, Mapping | list | tuple):
                stack.append((child, depth + 1))
    return False


def parse_payload(model: type[P], payload: Mapping[str, Any]) -> P:
    """``payload`` checked against ``model``, or :class:`PayloadRejected`."""
    if _too_deep(payload):
        raise PayloadRejected(TOO_DEEP)
    try:
        # As JSON, the form it is stored in: allow_nan=False refuses what jsonb refuses.
        text = _JSON.encode(dict(payload))
    except (TypeError, ValueError) as error:
        raise PayloadRejected(f"payload is not JSON: {error}") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        raise PayloadRejected(describe(model, error)) from None


def describe(model: type[Payload], error: ValidationError) -> str:
    """The first problem of ``error`` as one line, and how many more there are."""
    problems = error.errors(include_url=False)
    line = _problem(model, problems[0])
    if len(problems) > 1:
        line += f" (and {len(problems) - 1} more)"
    return line


def _problem(model: type[Payload], problem: ErrorDetails) -> str:
    loc = problem["loc"]
    kind = problem["type"]
    if not loc:
        return f"payload: {_expected(problem)}"
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    field = field.removeprefix(".")
    if kind == "extra_forbidden":
        taken = ", ".join(sorted(model.model_fields)) or "none"
        return f'payload field "{field}" is not one it takes (it takes: {taken})'
    if kind == "missing":
        return f'payload field "{field}" is required'
    return f'payload field "{field}": {_expected(problem)}, got {_shown(problem["input"])}'


# What a value should have been, by pydantic's error type; others say pydantic's words.
_EXPECTED = {
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a JSON object",
    "model_type": "a JSON object",
    "bool_type": "true or false",
    "uuid_type": "a UUID",
    "uuid_parsing": "a UUID",
}


def _expected(problem: ErrorDetails) -> str:
    kind = problem["type"]
    limits = problem.get("ctx") or {}
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}"
    for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if name in limits:
            limit = limits[name]
            shown = f"{limit:g}" if isinstance(limit, float) else str(limit)
            return f"expected a number {sign} {shown}"
    message = problem["msg"].removeprefix("Value error, ")
    if message.startswith("Input should be "):
        return "expected " + message.removeprefix("Input should be ")
    return message


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= _SHOWN_INPUT else text[: _SHOWN_INPUT - 1] + "…"
