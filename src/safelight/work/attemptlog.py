"""The log of one attempt: what names the item and its attempt in every line, once.

Every line the engine writes about an attempt starts ``work item <id> attempt <n>: ``
and carries the attempt's fields (``item_id``, ``kind``, ``attempt``,
``storage_config_id``) on its record, which the JSON format writes as keys. Handlers
log through :func:`attempt_fields` alone: their lines carry the fields, and say what
they are about in their own words.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from safelight.work.model import WorkItem

__all__ = ["AttemptLog", "attempt_fields"]


def attempt_fields(item: WorkItem) -> dict[str, object]:
    """The fields every log record about ``item``'s attempt carries."""
    return {
        "item_id": item.id,
        "kind": item.kind,
        "attempt": item.attempt,
        "storage_config_id": item.storage_config_id,
    }


class AttemptLog(logging.LoggerAdapter[logging.Logger]):
    """A logger for one attempt: its prefix on each message, its fields on each record.

    ``extra=`` given to one call is added to the attempt's fields, not put in their place
    (the standard adapter would drop them), so a line can carry more, e.g. its outcome.
    """

    def __init__(self, logger: logging.Logger, item: WorkItem) -> None:
        # The fields and the prefix are made for each line written: most attempts write
        # none, and every attempt makes its log (docs/benchmarks.md, section 18).
        super().__init__(logger)
        self._item = item

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        item = self._item
        extra: Mapping[str, object] | None = kwargs.get("extra")
        fields = attempt_fields(item)
        kwargs["extra"] = fields if extra is None else {**fields, **extra}
        return f"work item {item.id} attempt {item.attempt}: {msg}", kwargs
