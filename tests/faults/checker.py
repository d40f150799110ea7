"""What must hold after any mix of faults, checked from the journals, the database and
the proxy folder once every fault is healed and the Workers have drained the queue.

1. ``side_effects``: no two attempts of one storage config ever had file side effects
   at overlapping times (:mod:`tests.faults.effects`).
2. ``items``: every item is succeeded, failed with a reason, cancelled, or queued; none
   is stuck running past its lease and a recovery interval while a Worker able to take
   it back was up and connected (ADR 0049); and every config names exactly its running
   item, if any (ADR 0011).
3. ``attempts``, ``stale_writes``, ``stale_effects``: no stale attempt's write reached
   the database or the disk.
   Every outcome an attempt writes itself (succeeded, failed, cancelled, released)
   belongs to the item's current attempt; each item's attempts follow one another;
   no two attempts of one config were running at once by the database's own clock,
   neither in the order of the server's transitions nor in the attempt history's own
   times (the operator's self-join of ``work_attempts``: no two attempts of a config
   with overlapping ``[claimed_at, ended_at)``, and each item's attempts one after
   another); and every library row a handler wrote, seen by an audit trigger inside the writing
   transaction, was written while exactly one item of its config was running, of a
   kind that writes that table. And every file side effect ended while its attempt
   still held a lease (recorded by another audit trigger, at every claim and heartbeat).
4. ``proxies``: every live asset has its thumbnail row and every file its rows name
   is on disk.
5. ``proxy_names``, ``proxy_rows``: the user-level invariants that ADR 0016 makes hold
   by construction even in the residual window, checked without any tolerance: every
   journalled write renames into a name carrying its own item and attempt (so none
   replaced another attempt's file), no journalled delete hit a file a live row
   names, and every proxy row was written while the attempt its name carries was its
   config's one running item (the fence), every live one naming a crawl's file.

Checks 1 and 3 see every effect of a stale attempt that landed after its lease ran
out. Those of the residual window that harm nothing by construction (``Window``:
begun inside the lease, and of a kind that cannot touch a file a live row names) are
reported as ``Explained``, with why, and are not violations; every other one is.
docs/reliability.md ("What is promised in the window") says the same.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from safelight.library.proxystore.layout import parse_proxy_name
from safelight.testing.stores import OVERLAPPING_ATTEMPTS, RUNNING_ITEM_MISMATCHES
from tests.faults.effects import KERNEL_CLOCK_MARGIN, Effect, overlaps

AUDIT_SQL = """
CREATE TABLE faults_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tbl text NOT NULL,
    op text NOT NULL,
    config uuid,
    row_id bigint,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    running jsonb NOT NULL
);
CREATE FUNCTION faults_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cfg uuid;
    rid bigint;
    now_running jsonb;
BEGIN
    IF TG_OP = 'DELETE' THEN
        cfg := OLD.storage_config_id;
    ELSE
        cfg := NEW.storage_config_id;
    END IF;
    IF TG_TABLE_NAME IN ('assets', 'bursts', 'similar_groups') THEN
        IF TG_OP = 'DELETE' THEN rid := OLD.id; ELSE rid := NEW.id; END IF;
    END IF;
    -- The writer's own item row is locked FOR SHARE by its fenced transaction, so
    -- recovery cannot have changed it: it is among these, and the per-config rule
    -- says it is the only one.
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'id', id, 'attempt', attempt, 'kind', kind, 'lease', lease_expires_at)),
           '[]'::jsonb)
    INTO now_running
    FROM work_items WHERE storage_config_id = cfg AND status = 'running';
    INSERT INTO faults_audit (tbl, op, config, row_id, running)
    VALUES (TG_TABLE_NAME, TG_OP, cfg, rid, now_running);
    RETURN NULL;
END
$$;
CREATE TRIGGER faults_audit_assets AFTER INSERT OR UPDATE OR DELETE ON assets
    FOR EACH ROW EXECUTE FUNCTION faults_audit_row();
CREATE TRIGGER faults_audit_bursts AFTER INSERT OR UPDATE OR DELETE ON bursts
    FOR EACH ROW EXECUTE FUNCTION faults_audit_row();
CREATE TRIGGER faults_audit_similar_groups AFTER INSERT OR UPDATE OR DELETE ON similar_groups
    FOR EACH ROW EXECUTE FUNCTION faults_audit_row();
CREATE TRIGGER faults_audit_asset_errors AFTER INSERT OR UPDATE OR DELETE ON asset_errors
    FOR EACH ROW EXECUTE FUNCTION faults_audit_row();
CREATE TRIGGER faults_audit_asset_duplicates AFTER INSERT OR UPDATE OR DELETE
    ON asset_duplicates FOR EACH ROW EXECUTE FUNCTION faults_audit_row();
CREATE TRIGGER faults_audit_faces AFTER INSERT OR UPDATE OR DELETE ON faces
    FOR EACH ROW EXECUTE FUNCTION faults_audit_row();
CREATE TRIGGER faults_audit_people AFTER INSERT OR UPDATE OR DELETE ON people
    FOR EACH ROW EXECUTE FUNCTION faults_audit_row();

-- Every status change of an item, in the order the server made them: the identity is
-- drawn inside the changing transaction, and a claim that conflicts with a running item
-- of its config waits on the running index until that item's change commits.
CREATE TABLE faults_transitions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item bigint NOT NULL,
    config uuid,
    kind text NOT NULL,
    attempt integer NOT NULL,
    old_status text NOT NULL,
    new_status text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION faults_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO faults_transitions (item, config, kind, attempt, old_status, new_status)
    VALUES (NEW.id, NEW.storage_config_id, NEW.kind, NEW.attempt, OLD.status, NEW.status);
    RETURN NULL;
END
$$;
CREATE TRIGGER faults_transitions AFTER UPDATE ON work_items
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION faults_transition();

-- Every lease an attempt held: set by its claim, moved by each heartbeat. "at" is when
-- the server made the change; the lease then runs to lease_expires_at.
CREATE TABLE faults_leases (
    item bigint NOT NULL,
    attempt integer NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_expires_at timestamptz NOT NULL
);
CREATE FUNCTION faults_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO faults_leases (item, attempt, lease_expires_at)
    VALUES (NEW.id, NEW.attempt, NEW.lease_expires_at);
    RETURN NULL;
END
$$;
CREATE TRIGGER faults_leases AFTER UPDATE ON work_items
    FOR EACH ROW WHEN (NEW.status = 'running'
        AND NEW.lease_expires_at IS DISTINCT FROM OLD.lease_expires_at)
    EXECUTE FUNCTION faults_lease();

-- Every proxy row a handler wrote, with its config's running items at that moment, seen
-- inside the writing transaction (as faults_audit sees the library's rows): the row's
-- path names the attempt that wrote its file (ADR 0016), which must be that one item.
CREATE TABLE faults_proxy_rows (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    op text NOT NULL,
    asset_id bigint NOT NULL,
    config uuid,
    path text,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    running jsonb NOT NULL
);
CREATE FUNCTION faults_proxy_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cfg uuid;
    now_running jsonb;
BEGIN
    SELECT storage_config_id INTO cfg FROM assets WHERE id = NEW.asset_id;
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'id', id, 'attempt', attempt, 'kind', kind)), '[]'::jsonb)
    INTO now_running
    FROM work_items WHERE storage_config_id = cfg AND status = 'running';
    INSERT INTO faults_proxy_rows (op, asset_id, config, path, running)
    VALUES (TG_OP, NEW.asset_id, cfg, NEW.path, now_running);
    RETURN NULL;
END
$$;
CREATE TRIGGER faults_proxy_rows AFTER INSERT OR UPDATE ON proxy_files
    FOR EACH ROW EXECUTE FUNCTION faults_proxy_row();

-- Every presence a Worker wrote (observe.presence, every recovery interval, from the same
-- loop machinery as lease recovery): when it was up and connected (check_liveness).
CREATE TABLE faults_presence (
    worker_id text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION faults_presence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO faults_presence (worker_id) VALUES (NEW.worker_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER faults_presence AFTER INSERT OR UPDATE ON workers
    FOR EACH ROW EXECUTE FUNCTION faults_presence();
"""
"""Test-only: installed in the suite's own database before any Worker starts."""

# Which kinds may write which library table (handlers/*: crawl ingests, moves,
# soft-deletes and records errors and duplicates; burst detection groups and pairs; purge deletes,
# and its delete of a burst's primary asset clears bursts.primary_asset_id by cascade; the
# scrub records when it checked an original and what it found, ADR 0062; a proxy remake
# stores its new thumbnail's picture hash, and burst detection fills the missing ones
# and groups similar shots, ADR 0066; the place fill writes the place and zone of rows
# from before 0023, ADR 0065; the faces kind records which content a photo's faces were
# found on, and writes faces and the people it groups them into, ADR 0067; a purge's
# delete of an asset deletes its faces by cascade).
WRITERS: Mapping[str, frozenset[str]] = {
    "assets": frozenset(
        {"crawl", "burst_detection", "purge", "scrub", "proxy_remake", "place_fill", "faces"}
    ),
    "faces": frozenset({"faces", "purge"}),
    "people": frozenset({"faces"}),
    "bursts": frozenset({"burst_detection", "purge"}),
    "similar_groups": frozenset({"burst_detection", "purge"}),
    "asset_errors": frozenset({"crawl"}),
    # The crawl records and forgets duplicates; a purge's delete of an asset cascades.
    "asset_duplicates": frozenset({"crawl", "purge"}),
}

# An attempt's own outcomes (the others are written by lease recovery).
OWN_OUTCOMES = frozenset({"succeeded", "failed", "cancelled", "released"})
ENDS_ITEM = {
    "succeeded": {"succeeded"},
    "failed": {"failed", "stalled"},
    "cancelled": {"cancelled", "superseded"},
    "queued": {"released", "stalled"},
}


@dataclass(frozen=True, slots=True)
class Violation:
    check: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.detail}"


@dataclass(frozen=True, slots=True)
class Explained:
    """An effect of a stale attempt in the residual window that harms nothing by
    construction: reported in the run's output with why, and not a violation."""

    check: str
    detail: str
    why: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.detail}\n    harmless: {self.why}"


Leases = Mapping[tuple[int, int], Sequence[tuple[float, float]]]
"""Per (item, attempt), the (set at, expires at) of every lease it held, wall-clock."""


def load_leases(conn: psycopg.Connection[Any]) -> dict[tuple[int, int], list[tuple[float, float]]]:
    leases: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for item, attempt, at, expires in conn.execute(
        "SELECT item, attempt, at, lease_expires_at FROM faults_leases ORDER BY at"
    ):
        leases[(item, attempt)].append((at.timestamp(), expires.timestamp()))
    return leases


def lease_until(leases: Leases, owner: tuple[int, int], at: float) -> float | None:
    """The end of the latest lease ``owner`` held by wall time ``at``, if any."""
    return max((expires for set_at, expires in leases.get(owner, ()) if set_at <= at), default=None)


def relative_to_root(target: str, proxy_root: Path) -> str | None:
    try:
        return Path(target).resolve().relative_to(proxy_root.resolve()).as_posix()
    except ValueError:
        return None


@dataclass(frozen=True)
class Window:
    """Tells an effect of the residual window (docs/reliability.md, "What is promised")
    that harms nothing by construction, and says why; anything else is a violation.

    Only an effect that ended after its attempt's lease ran out is a stale one. In the
    window, an attempt passed ``ensure_alive()`` while it held its lease and its
    one syscall landed later (frozen between the two, or blocked in the kernel). The
    journal's "before" line comes before that check, so such an effect *began* inside a
    lease of its attempt; one that began after all its leases had expired passed a
    check it should have failed (a broken self-stop): never explained. Then, since
    proxy names carry their attempt (ADR 0016), its syscall can only:

    - ``write``: rename a file into place under its own attempt's name, which no other
      attempt writes: at most an orphan, since its row cannot commit after it lost its
      item (``check_proxy_rows``). A name that is not its own is never explained;
    - ``delete``: unlink a name that no live row names at the end (names are never
      reused, so nothing will name it again): its purge's dead asset's file, or an
      orphan. One that a live row names is never explained;
    - ``rmdir``: remove an empty folder (it fails on any other);
    - ``mkdir``: add a folder, empty or wanted anyway;
    - fail, changing nothing.
    """

    leases: Leases
    live: Mapping[str, int]
    """Every path a live asset's proxy row names at the end, to its asset."""
    proxy_root: Path

    def explain(self, effect: Effect) -> str | None:
        end = effect.wall_end
        held = lease_until(self.leases, effect.owner, end)
        if held is not None and end <= held:
            # Not late: an effect inside its lease is no stale attempt's, and an overlap
            # it is part of is the other effect's to explain, or a violation.
            return None
        start = effect.wall_start
        until = lease_until(self.leases, effect.owner, start)
        if until is None or start > until:
            return None
        began = (
            f"it began {until - start:.3f} s before its attempt's lease ran out, so its "
            "check passed in the lease and only the syscall came late (the residual window)"
        )
        if effect.ok is False:
            return f"{began}; the syscall failed and changed nothing"
        relative = relative_to_root(effect.target, self.proxy_root)
        if effect.action == "write":
            name = None if relative is None else parse_proxy_name(relative)
            tag = None if name is None else name.written_by
            if tag is None or (tag.item_id, tag.attempt) != effect.owner:
                return None
            return (
                f"{began}; it renamed into place a name only its own attempt writes "
                "(ADR 0016): at most an orphan no row names, for the sweep"
            )
        if effect.action == "delete":
            if relative is not None and relative in self.live:
                return None
            return (
                f"{began}; it unlinked a name no live row names (names are never reused): "
                "its purge's dead asset's file, or an orphan"
            )
        if effect.action == "rmdir":
            return (
                f"{began}; rmdir removes only an empty folder (a newer rename into it "
                "fails, and that crawl reports the original for the next one)"
            )
        if effect.action == "mkdir":
            return f"{began}; mkdir adds at most an empty folder, for the sweep"
        return None


def install_audit(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(AUDIT_SQL)


# --- 1 --------------------------------------------------------------------------------


Freezes = Mapping[int, Sequence[tuple[float, float]]]
"""Per process id, the (SIGSTOP, SIGCONT) times of its freezes, monotonic."""


def spanned_freezes(effect: Effect, freezes: Freezes) -> list[tuple[float, float]]:
    """The freezes of the effect's own process that its interval spans."""
    return [
        (stop, cont)
        for stop, cont in freezes.get(effect.pid, ())
        if effect.start <= stop and cont <= effect.end
    ]


def freeze_note(effect: Effect, freezes: Freezes) -> str:
    """Says so when an effect's interval spans a freeze of its own process: then the
    effect itself ran in the moment before the freeze or the moment after it (the
    window ADR 0008 leaves to a process frozen between its check and its syscall).
    Meant for effects already passed through :func:`clip_at_kernel_time`: one that
    still spans a freeze has no kernel time, or one from as its process woke."""
    spans = spanned_freezes(effect, freezes)
    if not spans:
        return ""
    stop, cont = spans[0]
    return f" (its interval spans its process's freeze from {stop:.4f} to {cont:.4f})"


def clip_at_kernel_time(effect: Effect, freezes: Freezes) -> Effect:
    """The effect, its interval ended at its kernel time (plus the margin) if the
    interval spans a freeze of its own process and that time is known and earlier.

    The journal times an effect from its "before" line to its "after" line. A SIGSTOP
    that lands in the syscall, or between it and the "after" line, stretches that
    interval across the whole freeze although the effect was done before the process
    stopped. The kernel's time (``Effect.kernel``: the ctime of the folder the effect
    changed, read right after the syscall) is an upper bound of the effect up to
    ``KERNEL_CLOCK_MARGIN``: only later changes could have moved it, and only on.
    With the "before" line a lower bound, the effect lies in
    ``[start, kernel + margin]``, a proven interval whichever way it is read:

    - kernel + margin before the SIGSTOP: the effect ran before the freeze;
    - about at the SIGSTOP or later, before the SIGCONT: the syscall was already
      running when the signal came (a stopped process enters none) and the process
      stopped only once it returned. A SIGSTOP that lands while an ``unlink`` waits on
      the file system's journal does this; its stamp is then on either side of the
      recorded stop by up to as long as the syscall took. The effect is still placed
      where the kernel did it, and judged there;
    - at or after the SIGCONT: the process was frozen between its check and its
      syscall and ran the syscall on waking (the window ADR 0008 leaves). Then
      ``kernel + margin`` is not before the "after" line, nothing is clipped, and the
      interval still spans the freeze and is reported with the note.

    No kernel time (an effect that failed, or an ``after`` line without it), or one
    before the "before" line by more than the margin (so not this effect's: no
    syscall here leaves its folder unstamped, but if one did), leaves it as it is.
    """
    if effect.kernel is None or not spanned_freezes(effect, freezes):
        return effect
    if effect.kernel < effect.start - KERNEL_CLOCK_MARGIN:
        return effect
    bound = effect.kernel + KERNEL_CLOCK_MARGIN
    if bound >= effect.end:
        return effect
    return replace(effect, end=bound)


def check_side_effects(
    effects: Iterable[Effect],
    freezes: Freezes | None = None,
    window: Window | None = None,
    explained: list[Explained] | None = None,
) -> list[Violation]:
    """No overlaps between the intervals of two attempts of one config, each interval
    first ended at its kernel time where :func:`clip_at_kernel_time` allows it.

    With a ``window``, an overlap one of whose effects it explains goes to ``explained``
    instead: the effects it explains are taken out first, and every overlap left among
    the others is a violation (so an explained pair never hides another overlap of the
    same two attempts)."""
    clipped = [clip_at_kernel_time(e, freezes or {}) for e in effects]
    why = {e: window.explain(e) for e in clipped} if window is not None else {}
    judged = [e for e in clipped if why.get(e) is None]
    found = []
    for overlap in overlaps(judged):
        notes = "".join(freeze_note(e, freezes or {}) for e in (overlap.first, overlap.second))
        found.append(Violation("side_effects", overlap.describe() + notes))
    if explained is not None and window is not None:
        for overlap in overlaps(clipped):
            pair = (overlap.first, overlap.second)
            reasons = [f"{e.describe()}: {why[e]}" for e in pair if why.get(e) is not None]
            if reasons:
                notes = "".join(freeze_note(e, freezes or {}) for e in pair)
                explained.append(
                    Explained("side_effects", overlap.describe() + notes, "; ".join(reasons))
                )
    return found


# --- 2 --------------------------------------------------------------------------------


def check_items(
    conn: psycopg.Connection[Any], *, lease_seconds: float, recovery_seconds: float
) -> list[Violation]:
    found: list[Violation] = []
    slack = timedelta(seconds=recovery_seconds + 1.0)
    rows = conn.execute(
        "SELECT id, kind, status::text, error, lease_expires_at, clock_timestamp() "
        "FROM work_items ORDER BY id"
    ).fetchall()
    for item_id, kind, status, error, lease_expires_at, now in rows:
        if status == "failed" and not error:
            found.append(Violation("items", f"item {item_id} ({kind}) failed with no reason"))
        if status == "running" and lease_expires_at + slack < now:
            found.append(
                Violation(
                    "items",
                    f"item {item_id} ({kind}) still running {now - lease_expires_at} after its "
                    f"lease expired (recovery runs every {recovery_seconds:g} s)",
                )
            )
    # The name each config keeps of its running item (migration 0005, ADR 0011), which
    # the claim trusts to find idle configs, agrees with the items after every fault.
    for config, named, running in conn.execute(RUNNING_ITEM_MISMATCHES):
        found.append(
            Violation(
                "items", f"config {config} names running item {named}, but {running} is running"
            )
        )
    return found


Span = tuple[float, float]
"""An interval of wall-clock time, epoch seconds: the database's clock and the
scenario's ``time.time()``, one clock on one machine."""


def _union(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _minus(spans: Sequence[Span], holes: Iterable[Span]) -> list[Span]:
    left = list(spans)
    for hole_start, hole_end in _union(holes):
        cut: list[Span] = []
        for start, end in left:
            if end <= hole_start or start >= hole_end:
                cut.append((start, end))
                continue
            if start < hole_start:
                cut.append((start, hole_start))
            if end > hole_end:
                cut.append((hole_end, end))
        left = cut
    return left


def _measure(spans: Iterable[Span], within: Span) -> float:
    low, high = within
    return sum(max(0.0, min(end, high) - max(start, low)) for start, end in _union(spans))


def recovery_coverage(
    presence: Mapping[str, Sequence[float]], *, period: float, backoff_max: float
) -> dict[str, list[Span]]:
    """Per Worker, when it was up, connected, and its lease recovery running.

    A Worker writes its presence every ``period`` from the same loop machinery as lease
    recovery (``work.maintenance.every``): two writes at most ``2 * period + 0.5`` s
    apart show it up and connected in between. A longer gap is a Worker frozen, cut
    off, or without its database (PostgreSQL restarting). After a gap its loops come
    back one by one, each from its own backoff, which doubles from ``period``: a loop
    that kept failing over the gap waits at most about as long again (and never more
    than ``backoff_max``). So after a gap of ``g`` seconds its presence covers lease
    recovery only from ``g + period`` after its first write; after its first write of
    all (a Worker just started, both loops start at once), from one ``period`` on.
    """
    gap_max = 2 * period + 0.5
    coverage: dict[str, list[Span]] = {}
    for worker, stamps in presence.items():
        spans: list[Span] = []
        times = sorted(stamps)
        run_start = 0
        for i in range(1, len(times) + 1):
            if i < len(times) and times[i] - times[i - 1] <= gap_max:
                continue
            # times[run_start:i] is one run of writes, none more than gap_max apart.
            gap = times[run_start] - times[run_start - 1] if run_start > 0 else 0.0
            settled = times[run_start] + min(gap, backoff_max) + period
            if times[i - 1] > settled:
                spans.append((settled, times[i - 1]))
            run_start = i
        coverage[worker] = spans
    return coverage


@dataclass(frozen=True, slots=True)
class Running:
    """One attempt's time as its item's running one, and the leases it held."""

    item: int
    attempt: int
    kind: str
    worker: str
    started: float
    ended: float
    """When the item left running, or when the check ran if it still runs."""
    leases: Sequence[Span]
    """(set at, expires at) of every lease the attempt held, in order."""

    def overdue(self) -> list[Span]:
        """When the attempt ran with no lease: from each lease's end (or from the
        claim, if a claim delayed past its lease set one already in the past) to the
        next lease set, or to the end."""
        spans: list[Span] = []
        for index, (_, expires) in enumerate(self.leases):
            renewed = self.leases[index + 1][0] if index + 1 < len(self.leases) else self.ended
            start = max(expires, self.started)
            end = min(renewed, self.ended)
            if end > start:
                spans.append((start, end))
        return _union(spans)


def judge_liveness(
    runs: Iterable[Running],
    coverage: Mapping[str, Sequence[Span]],
    held: Mapping[str, Sequence[Span]],
    *,
    grace: float,
    recovery_seconds: float,
) -> list[Violation]:
    """An attempt whose item stayed running past its lease for more than ``grace``
    seconds *while a Worker able to take it back was up and connected*: some Worker's
    ``coverage`` (:func:`recovery_coverage`), less the times its own Worker was
    ``held`` (frozen, or cut off: a fenced transaction it had open keeps the item's row
    locked, and lease recovery skips locked rows, ADR 0016). Time with no such Worker
    (PostgreSQL restarting, every Worker down or reconnecting) is no Worker's fault."""
    able = _union(span for spans in coverage.values() for span in spans)
    found: list[Violation] = []
    for run in runs:
        mine = _minus(able, held.get(run.worker, ()))
        for start, end in run.overdue():
            waited = _measure(mine, (start, end))
            if waited > grace:
                found.append(
                    Violation(
                        "items",
                        f"item {run.item} ({run.kind}) attempt {run.attempt} of worker "
                        f"{run.worker} was still running {end - start:.1f} s after its lease "
                        f"expired, {waited:.1f} s of them while a Worker able to take it back "
                        f"was up and connected (recovery runs every {recovery_seconds:g} s)",
                    )
                )
                break
    return found


def load_running(conn: psycopg.Connection[Any]) -> list[Running]:
    """Every attempt's running time, from the audit's transitions and leases."""
    ((now,),) = conn.execute("SELECT clock_timestamp()").fetchall()
    leases = load_leases(conn)
    owners = {
        (item, attempt): (kind, worker or "")
        for item, attempt, kind, worker in conn.execute(
            "SELECT a.work_item_id, a.attempt, w.kind, a.worker_id FROM work_attempts a "
            "JOIN work_items w ON w.id = a.work_item_id"
        )
    }
    started: dict[tuple[int, int], float] = {}
    runs: list[Running] = []

    def close(key: tuple[int, int], ended: float) -> None:
        kind, worker = owners.get(key, ("?", "?"))
        runs.append(
            Running(key[0], key[1], kind, worker, started.pop(key), ended, leases.get(key, []))
        )

    for item, attempt, old, new, at in conn.execute(
        "SELECT item, attempt, old_status, new_status, at FROM faults_transitions ORDER BY id"
    ):
        key = (int(item), int(attempt))
        if new == "running":
            started[key] = at.timestamp()
        elif old == "running" and key in started:
            close(key, at.timestamp())
    for key in list(started):
        close(key, now.timestamp())
    return runs


def load_presence(conn: psycopg.Connection[Any]) -> dict[str, list[float]]:
    presence: dict[str, list[float]] = defaultdict(list)
    for worker, at in conn.execute("SELECT worker_id, at FROM faults_presence ORDER BY at"):
        presence[worker].append(at.timestamp())
    return presence


def check_liveness(
    conn: psycopg.Connection[Any],
    held: Mapping[str, Sequence[Span]],
    *,
    recovery_seconds: float,
    backoff_max_seconds: float,
) -> list[Violation]:
    """Check 2 over the whole run, from the audit tables: no item stays running more
    than a recovery interval + 1.5 s past its lease while a Worker able to take it back
    is up and connected (:func:`judge_liveness`)."""
    coverage = recovery_coverage(
        load_presence(conn), period=recovery_seconds, backoff_max=backoff_max_seconds
    )
    return judge_liveness(
        load_running(conn),
        coverage,
        held,
        grace=recovery_seconds + 1.5,
        recovery_seconds=recovery_seconds,
    )


# --- 3 --------------------------------------------------------------------------------


def check_attempts(conn: psycopg.Connection[Any]) -> list[Violation]:
    found: list[Violation] = []
    cur = conn.cursor(row_factory=dict_row)
    items = {
        r["id"]: r
        for r in cur.execute("SELECT id, kind, status::text AS status, attempt FROM work_items")
    }
    attempts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in cur.execute(
        "SELECT work_item_id, attempt, worker_id, storage_config_id, claimed_at, ended_at, "
        "outcome::text AS outcome FROM work_attempts ORDER BY work_item_id, attempt"
    ):
        attempts[row["work_item_id"]].append(row)
    for item_id, rows in attempts.items():
        item = items[item_id]
        numbers = [r["attempt"] for r in rows]
        if numbers != list(range(1, item["attempt"] + 1)):
            found.append(
                Violation(
                    "attempts", f"item {item_id}: attempts {numbers}, item at {item['attempt']}"
                )
            )
            continue
        # The times are the database's, each read inside its transition's statement
        # (ADR 0015): an attempt ends after its claim, and the next one is claimed
        # only after that end committed.
        for row in rows:
            if row["ended_at"] is not None and not row["claimed_at"] <= row["ended_at"]:
                found.append(
                    Violation(
                        "attempts",
                        f"item {item_id}: attempt {row['attempt']} ended at {row['ended_at']}, "
                        f"before its claim at {row['claimed_at']}",
                    )
                )
        for earlier, later in itertools.pairwise(rows):
            if earlier["ended_at"] is None or not earlier["ended_at"] <= later["claimed_at"]:
                found.append(
                    Violation(
                        "attempts",
                        f"item {item_id}: attempt {later['attempt']} claimed at "
                        f"{later['claimed_at']}, but attempt {earlier['attempt']} ended at "
                        f"{earlier['ended_at']}",
                    )
                )
            if earlier["outcome"] not in ("released", "stalled"):
                found.append(
                    Violation(
                        "attempts",
                        f"item {item_id}: attempt {earlier['attempt']} ended {earlier['outcome']} "
                        f"but the item was claimed again (attempt {later['attempt']})",
                    )
                )
        last = rows[-1]
        status = item["status"]
        if status == "running":
            if last["outcome"] is not None:
                found.append(
                    Violation("attempts", f"item {item_id} running, its last attempt ended")
                )
        elif last["outcome"] not in ENDS_ITEM.get(status, set()):
            found.append(
                Violation(
                    "attempts",
                    f"item {item_id} is {status} but its last attempt {last['attempt']} "
                    f"ended {last['outcome']}",
                )
            )
    return found


def check_attempt_history(conn: psycopg.Connection[Any]) -> list[Violation]:
    """The operator's check, from ``work_attempts`` alone: per config, no two attempts
    whose ``[claimed_at, ended_at)`` overlap (an attempt still open runs on)."""
    found: list[Violation] = []
    for (
        config,
        a_item,
        a_attempt,
        a_claimed,
        a_ended,
        b_item,
        b_attempt,
        b_claimed,
        b_ended,
    ) in conn.execute(OVERLAPPING_ATTEMPTS):
        found.append(
            Violation(
                "attempts",
                f"config {config}: item {a_item} attempt {a_attempt} [{a_claimed}, {a_ended}) "
                f"and item {b_item} attempt {b_attempt} [{b_claimed}, {b_ended}) overlap "
                "in the attempt history",
            )
        )
    return found


def check_transitions(conn: psycopg.Connection[Any]) -> list[Violation]:
    """Per config, in the server's order: an item becomes running only while no other
    item of the config is, and only the running one leaves running."""
    found: list[Violation] = []
    running: dict[Any, tuple[int, int]] = {}
    for item, config, attempt, old, new, at in conn.execute(
        "SELECT item, config, attempt, old_status, new_status, at FROM faults_transitions "
        "WHERE config IS NOT NULL ORDER BY id"
    ):
        if new == "running":
            if config in running:
                other = running[config]
                found.append(
                    Violation(
                        "attempts",
                        f"config {config}: item {item} attempt {attempt} started at {at} while "
                        f"item {other[0]} attempt {other[1]} was running",
                    )
                )
            running[config] = (item, attempt)
        elif old == "running":
            if running.get(config) != (item, attempt):
                found.append(
                    Violation(
                        "attempts",
                        f"config {config}: item {item} attempt {attempt} left running at {at}, "
                        f"but the running one was {running.get(config)}",
                    )
                )
            running.pop(config, None)
    return found


def check_stale_writes(conn: psycopg.Connection[Any]) -> list[Violation]:
    found: list[Violation] = []
    for tbl, op, config, row_id, at, running in conn.execute(
        "SELECT tbl, op, config, row_id, at, running FROM faults_audit ORDER BY id"
    ):
        what = f"{op} on {tbl} (row {row_id}) of config {config} at {at}"
        if len(running) != 1:
            found.append(
                Violation(
                    "stale_writes",
                    f"{what}: {len(running)} items of the config running ({running})",
                )
            )
            continue
        (owner,) = running
        if owner["kind"] not in WRITERS[tbl]:
            found.append(
                Violation(
                    "stale_writes",
                    f"{what}: the config's running item is a {owner['kind']} "
                    f"(item {owner['id']} attempt {owner['attempt']}), which never writes {tbl}",
                )
            )
    return found


def check_effects_within_lease(
    conn: psycopg.Connection[Any],
    effects: Iterable[Effect],
    freezes: Freezes | None = None,
    window: Window | None = None,
    explained: list[Explained] | None = None,
) -> list[Violation]:
    """No attempt touched a file outside its lease.

    Once an attempt's lease has expired, lease recovery may give its config to another
    attempt at any moment; the self-stop is meant to have stopped it half a lease
    before that. So every effect must end while some lease the attempt held by then
    (its claim's, or one a heartbeat had renewed before the effect ended) still ran.
    Both are on the real clock: each lease as the database stamped it, each effect
    through the real time its own journal lines read (``Effect.wall_end``), so a step
    of that clock during the run moves both alike. An effect whose interval spans a
    freeze ends at its kernel time where :func:`clip_at_kernel_time` allows it. With a
    ``window``, each effect outside its lease that the window explains goes to
    ``explained``; the first other one of each attempt is a violation.
    """
    leases = load_leases(conn)
    found: list[Violation] = []
    reported: set[tuple[int, int]] = set()
    clipped = [clip_at_kernel_time(e, freezes or {}) for e in effects]
    for effect in sorted(clipped, key=lambda e: e.start):
        end = effect.wall_end
        until = lease_until(leases, effect.owner, end)
        if until is not None and end <= until:
            continue
        if until is None:
            why = "no lease of that attempt was recorded before it"
        else:
            why = f"the attempt's lease had expired {end - until:.3f} s before it ended"
        note = freeze_note(effect, freezes or {})
        detail = f"{effect.describe()}: {why}{note}"
        harmless = window.explain(effect) if window is not None else None
        if harmless is not None:
            if explained is not None:
                explained.append(Explained("stale_effects", detail, harmless))
            continue
        if effect.owner in reported:
            continue
        reported.add(effect.owner)
        found.append(Violation("stale_effects", detail))
    return found


# --- 4 --------------------------------------------------------------------------------


def live_proxy_paths(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Every path a live asset's proxy row names, to its asset."""
    return {
        path: asset_id
        for asset_id, path in conn.execute(
            "SELECT a.id, p.path FROM assets a JOIN proxy_files p ON p.asset_id = a.id "
            "WHERE NOT a.is_deleted AND p.path IS NOT NULL"
        )
    }


def check_proxies(conn: psycopg.Connection[Any], proxy_root: Path) -> list[Violation]:
    """Every live asset has its thumbnail row, and every file its rows name is on disk:
    no tolerance, whatever happened in the window."""
    found: list[Violation] = []
    for path, asset_id in sorted(live_proxy_paths(conn).items()):
        if not (proxy_root / path).is_file():
            found.append(
                Violation("proxies", f"live asset {asset_id}: its proxy {path} is not on disk")
            )
    missing_rows = conn.execute(
        "SELECT a.id FROM assets a WHERE NOT a.is_deleted AND NOT EXISTS "
        "(SELECT 1 FROM proxy_files p WHERE p.asset_id = a.id AND p.proxy_type = 'thumbnail')"
    ).fetchall()
    for (asset_id,) in missing_rows:
        found.append(Violation("proxies", f"live asset {asset_id} has no thumbnail row"))
    return found


def check_proxy_names(
    effects: Iterable[Effect], live: Mapping[str, int], proxy_root: Path
) -> list[Violation]:
    """No journalled effect ever replaced or deleted a file a live row names, checked
    without any tolerance, in the window too (ADR 0016 makes it hold by construction):

    - every ``write`` renames into a name that carries its own item and attempt, so no
      write replaced a file any other attempt wrote, whenever a row named it;
    - no ``delete`` that may have run (it succeeded, or its process died inside it)
      targets a file a live row names at the end (names are never reused: no delete of
      one can be legitimate, before the row or after it).
    """
    found: list[Violation] = []
    for effect in effects:
        relative = relative_to_root(effect.target, proxy_root)
        if effect.action == "write":
            name = None if relative is None else parse_proxy_name(relative)
            tag = None if name is None else name.written_by
            if tag is None or (tag.item_id, tag.attempt) != effect.owner:
                carried = "no attempt" if tag is None else f"attempt {tag.text}"
                found.append(
                    Violation(
                        "proxy_names",
                        f"{effect.describe()}: a write to a name that carries {carried}, "
                        f"not its own {effect.item}-{effect.attempt}: it can replace "
                        "another attempt's file",
                    )
                )
        elif effect.action == "delete" and effect.ok is not False and relative in live:
            found.append(
                Violation(
                    "proxy_names",
                    f"{effect.describe()}: deleted {relative}, the proxy of live asset "
                    f"{live.get(relative or '')}",
                )
            )
    return found


def check_proxy_rows(conn: psycopg.Connection[Any]) -> list[Violation]:
    """No stale attempt's proxy row reached the database: every proxy row written (seen
    by an audit trigger inside the writing transaction) names a file of the attempt
    that was then its config's one running item; and every live row names a file
    written by a crawl attempt of its asset's config."""
    found: list[Violation] = []
    for op, asset_id, config, path, at, running in conn.execute(
        "SELECT op, asset_id, config, path, at, running FROM faults_proxy_rows "
        "WHERE path IS NOT NULL ORDER BY id"
    ):
        what = f"{op} of a proxy row of asset {asset_id} (config {config}) naming {path} at {at}"
        name = parse_proxy_name(path)
        tag = None if name is None else name.written_by
        owners = [(r["id"], r["attempt"]) for r in running]
        if tag is None:
            found.append(Violation("proxy_rows", f"{what}: its name carries no attempt"))
        elif len(running) != 1 or (tag.item_id, tag.attempt) not in owners:
            found.append(
                Violation(
                    "proxy_rows",
                    f"{what}: written by attempt {tag.text}, but the config's running "
                    f"items were {running}",
                )
            )
    crawls = {
        (item, attempt): config
        for item, attempt, config in conn.execute(
            "SELECT a.work_item_id, a.attempt, w.storage_config_id FROM work_attempts a "
            "JOIN work_items w ON w.id = a.work_item_id WHERE w.kind = 'crawl'"
        )
    }
    for asset_id, config, path in conn.execute(
        "SELECT a.id, a.storage_config_id, p.path FROM assets a "
        "JOIN proxy_files p ON p.asset_id = a.id WHERE NOT a.is_deleted AND p.path IS NOT NULL"
    ):
        name = parse_proxy_name(path)
        tag = None if name is None else name.written_by
        if tag is None or crawls.get((tag.item_id, tag.attempt)) != config:
            found.append(
                Violation(
                    "proxy_rows",
                    f"live asset {asset_id} (config {config}): its row names {path}, "
                    "not a file of a crawl attempt of its config",
                )
            )
    return found


# --- all of them ----------------------------------------------------------------------


def check_everything(
    conn: psycopg.Connection[Any],
    effects: Sequence[Effect],
    freezes: Freezes,
    proxy_root: Path,
) -> tuple[list[Violation], list[Explained]]:
    """Every check of a drained run that the journals and the database can make (the
    scenario adds check 2, which needs the times its Workers were frozen or cut off:
    :func:`check_items` and :func:`check_liveness`), and the window's explained effects:
    what a fault run reports, and what a test of one fault asserts on."""
    found: list[Violation] = []
    explained: list[Explained] = []
    live = live_proxy_paths(conn)
    window = Window(load_leases(conn), live, proxy_root)
    found += check_side_effects(effects, freezes, window, explained)
    found += check_attempts(conn)
    found += check_attempt_history(conn)
    found += check_transitions(conn)
    found += check_stale_writes(conn)
    found += check_effects_within_lease(conn, effects, freezes, window, explained)
    found += check_proxies(conn, proxy_root)
    found += check_proxy_names(effects, live, proxy_root)
    found += check_proxy_rows(conn)
    return found, explained
