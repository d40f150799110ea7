"""The lifecycle lines of attempts: what the log says of the Workers' work (ADR 0032).

At DEBUG every attempt has its two lines, written as they happen::

    work item 42 attempt 1: claimed by nas/0 (crawl, config 3f0c…)
    work item 42 attempt 1: ended succeeded after 7.112 s (crawl, config 3f0c…)

At INFO, the level a Worker process runs at for months, an attempt has lines of its own
only when it is worth one: still running a second after its claim (one line then, that
it runs and which Worker claimed it when), or ended after that second, or ended in any
other way than a success whose write applied. Attempts that succeeded within the second
are counted instead, and one line a minute sums them up by kind::

    142,120 attempts succeeded within 1 s in the last 60 s (noop 142,000, proxy_sweep 120)

Every attempt is in the database's history as well (``work_attempts``: its Worker, when
it was claimed and ended, how), and every failure, retry and stop has its own warning
or error line from the executor. Why: written for every attempt, the two records cost a
Worker as much CPU as the rest of a no-op item (docs/benchmarks.md, section 3).

One :class:`Lifecycle` serves all the Workers of a process, on the event loop's thread.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from safelight.core.clock import Clock, TimerHandle
from safelight.work.attemptlog import AttemptLog
from safelight.work.executor import RunResult
from safelight.work.model import WorkItem
from safelight.work.outcome import Succeeded

__all__ = ["PROMPT_SECONDS", "SUMMARY_SECONDS", "Claim", "Lifecycle"]

PROMPT_SECONDS = 1.0
"""An attempt that succeeds within this many seconds of its claim is only counted at INFO."""
SUMMARY_SECONDS = 60.0
"""How often at most the counted attempts are summed up in one line."""


@dataclass(slots=True)
class Claim:
    """One claimed attempt, as its lines need it."""

    item: WorkItem
    worker_id: str
    running_line: TimerHandle | None = None
    _log: AttemptLog | None = field(default=None, repr=False)

    def quiet(self) -> None:
        """No "running" line any more: the attempt is over (however it ended)."""
        if self.running_line is not None:
            self.running_line.cancel()
            self.running_line = None

    def log(self, logger: logging.Logger) -> AttemptLog:
        if self._log is None:
            self._log = AttemptLog(logger, self.item)
        return self._log

    @property
    def where(self) -> str:
        item = self.item
        scope = "unscoped" if item.storage_config_id is None else f"config {item.storage_config_id}"
        return f"{item.kind}, {scope}"


class Lifecycle:
    """Writes the attempts' lifecycle lines (see the module docstring)."""

    def __init__(
        self,
        logger: logging.Logger,
        clock: Clock,
        *,
        prompt_seconds: float = PROMPT_SECONDS,
        summary_seconds: float = SUMMARY_SECONDS,
    ) -> None:
        self._logger = logger
        self._clock = clock
        self._prompt_seconds = prompt_seconds
        self._summary_seconds = summary_seconds
        self._counted: Counter[str] = Counter()
        self._summary: TimerHandle | None = None
        # When the attempts the next summary sums up began to be counted: set by the
        # first count after each summary, the only time a summary is armed.
        self._counting_since: float

    def claimed(self, item: WorkItem, worker_id: str) -> Claim:
        claim = Claim(item, worker_id)
        if self._logger.isEnabledFor(logging.DEBUG):
            claim.log(self._logger).debug(
                "claimed by %s (%s)", worker_id, claim.where, extra={"worker_id": worker_id}
            )
        if self._logger.isEnabledFor(logging.INFO):
            claim.running_line = self._clock.call_later(
                self._prompt_seconds, lambda: self._still_running(claim)
            )
        return claim

    def _still_running(self, claim: Claim) -> None:
        claim.running_line = None
        claim.log(self._logger).info(
            "running: claimed by %s %g s ago (%s)",
            claim.worker_id,
            self._prompt_seconds,
            claim.where,
            extra={"worker_id": claim.worker_id},
        )

    def ended(self, claim: Claim, result: RunResult, seconds: float) -> None:
        """The attempt of ``claim`` ended ``seconds`` after its claim, as ``result`` says."""
        claim.quiet()
        applied = result.write is None or result.applied
        prompt = (
            seconds < self._prompt_seconds and isinstance(result.outcome, Succeeded) and applied
        )
        level = logging.DEBUG if prompt else logging.INFO
        if self._logger.isEnabledFor(level):
            claim.log(self._logger).log(
                level,
                "ended %s after %.3f s (%s)%s",
                result.outcome.name,
                seconds,
                claim.where,
                "" if applied else "; its write did not apply",
                extra={
                    "outcome": result.outcome.name,
                    "seconds": round(seconds, 3),
                    "worker_id": claim.worker_id,
                },
            )
        if prompt and self._logger.isEnabledFor(logging.INFO):
            self._counted[claim.item.kind] += 1
            if self._summary is None:
                self._counting_since = self._clock.monotonic()
                self._summary = self._clock.call_later(self._summary_seconds, self.flush)

    def flush(self) -> None:
        """Write the summary of the attempts counted since the last one, if any (the
        Worker process calls it as it stops, so the last minute is not lost)."""
        if self._summary is not None:
            self._summary.cancel()
            self._summary = None
        counted, self._counted = self._counted, Counter()
        total = sum(counted.values())
        if not total:
            return
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counted.items()))
        self._logger.info(
            "%s attempt%s succeeded within %g s in the last %.0f s (%s)",
            f"{total:,}",
            "" if total == 1 else "s",
            self._prompt_seconds,
            self._clock.monotonic() - self._counting_since,
            kinds,
            extra={"succeeded": dict(counted)},
        )
