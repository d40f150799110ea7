-- Every runtime query of the engine, as named blocks: "-- name --" then a line that
-- says what it does. Loaded once by safelight.work.store. Every write of an attempt is
-- fenced by (id, attempt) and status = 'running', and "no row" means the attempt lost
-- the item.
-- Times: a transition (claimed, started, heartbeat, lease, ended, finished) is stamped
-- coalesce(%(now)s, clock_timestamp()): the database's wall clock, read inside the
-- statement that makes it (ADR 0015, docs/state-machine.md), unless the caller's clock
-- gives a time (a test's FakeClock; Clock.transition_time). clock_timestamp(), not
-- now(): now() is when the transaction began, and a statement that waited for the one
-- before it (a row lock, the running index) would record a time before that one's end.
-- requested_at and the schedules stay on the caller's clock (%(now)s, never NULL).
-- Names read subject first (ADR 0020): the table or thing the query reads or changes,
-- singular for one row and plural for a set, then what it does or returns, then any
-- qualifier (`attempt_lock`, `items_claim`).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- config_check --
-- Whether a storage config exists and is active (enqueue validates its scope).
SELECT active FROM storage_configs WHERE id = %(config_id)s

-- item_enqueue --
-- Add a queued item, or nothing when its dedup key already has a queued item.
INSERT INTO work_items (kind, storage_config_id, dedup_key, payload, requested_at)
VALUES (%(kind)s, %(config_id)s, %(dedup_key)s, %(payload)s, %(now)s)
ON CONFLICT (dedup_key) WHERE status = 'queued' AND dedup_key IS NOT NULL DO NOTHING
RETURNING id

-- items_enqueue --
-- Add queued items of one kind, one per element of items, in order; a row for each: its id, or that of the queued item holding its dedup key (NULL: try it again).
-- items is one JSON array of {payload, dedup_key}: one parameter for a whole batch, one
-- statement (bench/throughput.py, issue #18). Each element's id is drawn from the
-- table's identity before the insert, in the array's order (ord), so the rows back can
-- be matched with the elements whatever order the server returns them in, and a batch
-- takes its place in the queue in that order (requested_at is the same for all).
-- Dedup keys are honoured as item_enqueue honours them: an element whose key already
-- has a queued item, or an earlier element of the batch, adds nothing, and its id is
-- that item's. Elements without a key go in by a plain insert: ON CONFLICT's
-- speculative insertion, paid for every row it inserts, cannot apply to them. Hazard: a holder that commits, or is claimed, between this statement's
-- snapshot and its insert is not seen by the look-up; the element's id is NULL and the
-- store runs it again, as item_enqueue's caller does.
-- The identity's sequence is named as a regclass literal, resolved once when the
-- statement is parsed: pg_get_serial_sequence() looked it up in the catalog for every
-- element, 3.7 µs each, a seventh of a batch (tests/integration/test_store_notify.py
-- checks the name).
WITH input AS MATERIALIZED (
    SELECT e.ord,
           nextval('work_items_id_seq'::regclass) AS id,
           e.item ->> 'dedup_key' AS dedup_key,
           e.item -> 'payload' AS payload
    FROM jsonb_array_elements(%(items)s::jsonb) WITH ORDINALITY AS e(item, ord)
), keyless AS (
    INSERT INTO work_items (id, kind, storage_config_id, dedup_key, payload, requested_at)
    OVERRIDING SYSTEM VALUE
    SELECT i.id, %(kind)s, %(config_id)s, NULL, i.payload, %(now)s
    FROM input i
    WHERE i.dedup_key IS NULL
    RETURNING id
), keyed AS (
    INSERT INTO work_items (id, kind, storage_config_id, dedup_key, payload, requested_at)
    OVERRIDING SYSTEM VALUE
    SELECT i.id, %(kind)s, %(config_id)s, i.dedup_key, i.payload, %(now)s
    FROM input i
    WHERE i.dedup_key IS NOT NULL
    ORDER BY i.ord
    ON CONFLICT (dedup_key) WHERE status = 'queued' AND dedup_key IS NOT NULL DO NOTHING
    RETURNING id, dedup_key
)
SELECT i.ord, coalesce(n.id, y.id, k.id, q.id) AS id
FROM input i
LEFT JOIN keyless n ON n.id = i.id
LEFT JOIN keyed y ON y.id = i.id
LEFT JOIN keyed k ON y.id IS NULL AND k.dedup_key = i.dedup_key
LEFT JOIN work_items q
    ON y.id IS NULL AND k.id IS NULL AND q.dedup_key = i.dedup_key AND q.status = 'queued'
ORDER BY i.ord

-- item_queued_by_dedup_key --
-- The queued item that holds a dedup key.
SELECT id FROM work_items WHERE dedup_key = %(dedup_key)s AND status = 'queued'

-- items_claim --
-- Take the oldest eligible queued items, at most one for each Worker named, with leases.
-- Eligible: a kind these Workers run; unscoped, or of an active config they serve that
-- has no running item; and at most one item of a config. Two looks (bench/claim.py), so
-- no claim walks the items of busy configs waiting ahead, nor probes every config when
-- the queue's head would do:
-- 1. each config's first among the oldest 16 queued (ix_work_items_queue_order, only
--    for queries naming attempt >= 0); the first eligible are the oldest of all. Not a
--    config's second item: taking it past a head another claimer holds loses a race.
-- 2. only if none is eligible: the unscoped heads and each idle config's head, the
--    idle configs read from ix_storage_configs_idle (running_item_id, kept by a
--    trigger: migration 0005, ADR 0011), so busy configs cost nothing.
-- The nth item taken goes to the nth of worker_ids. %(limit)s is their number, written
-- into the text by safelight.work.store (a generic plan for LIMIT $n would assume a
-- tenth of the table, and PostgreSQL would plan every claim anew). kinds and worker_ids
-- come as array literals (safelight.core.sql.text_array): one string each, which the
-- client dumps far faster than a list (docs/benchmarks.md, issue #18).
-- Hazard: two claimers can pass the running check for one config at once (neither
-- sees the other's uncommitted running_item_id); ix_work_items_storage_config_running
-- rejects one.
-- Times (ADR 0015): the item's started_at, heartbeat_at and lease come from "stamp",
-- read once the statement has locked its picks (the lease only ever starts after the
-- claim was sent, so the executor's self-stop keeps its half lease). The attempt's
-- claimed_at is read per row in "history", after the item's row passed the running
-- index: a claim that waited there for the end of its config's previous attempt is
-- stamped after that end committed, so the history's intervals of a config never meet.
-- Waiting for a retry (ADR 0024): an item whose not_before is still ahead of "due"
-- (read once, as the first look starts) is passed over in every look, by a filter on
-- the rows the indexes return, so it blocks neither other configs nor the later items
-- of its own config; once due it is taken in its place (requested_at). Checked again
-- on the locked row, which a retry may have changed since the snapshot.
-- Paused (ADR 0060): a paused kind is left out of "claimable", the kinds asked for less
-- those in paused_kinds (read once; the table holds a row per paused kind), so every
-- look reads only the kinds it may take, and a paused kind's item heads no config in
-- the first look. A paused config is passed over where busy ones are (c.paused_at IS
-- NULL beside c.running_item_id IS NULL): its head among the 16 hides no other
-- config's, and the second look reads its head only to drop it. A pause that commits
-- while a claim runs binds the next claim; the one running may still take one item.
-- Only the description line is sent (safelight.core.sql): under 4096 characters, or
-- psycopg re-parses it on every call.
WITH claimable AS MATERIALIZED (
    SELECT array(
        SELECT k FROM unnest(%(kinds)s::text[]) k
        WHERE NOT EXISTS (SELECT 1 FROM paused_kinds p WHERE p.kind = k)
    ) AS kinds
), stamp AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
), due AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
), fast AS (
    SELECT w.id, w.requested_at
    FROM work_items w
    WHERE w.status = 'queued' AND (w.not_before IS NULL OR w.not_before <= (SELECT at FROM due))
      AND w.id IN (
        SELECT h.id
        FROM (
            SELECT q.id, q.storage_config_id, row_number() OVER (
                PARTITION BY q.storage_config_id ORDER BY q.requested_at, q.id
            ) AS nth
            FROM (
                SELECT q.id, q.storage_config_id, q.requested_at
                FROM work_items q
                WHERE q.status = 'queued' AND q.attempt >= 0 AND q.kind = ANY((SELECT kinds FROM claimable)::text[])
                  AND (q.not_before IS NULL OR q.not_before <= (SELECT at FROM due))
                ORDER BY q.requested_at, q.id
                LIMIT 16
            ) q
        ) h
        WHERE h.nth = 1 OR h.storage_config_id IS NULL
      )
      AND (
        w.storage_config_id IS NULL
        OR EXISTS (
          SELECT 1 FROM storage_configs c
          WHERE c.id = w.storage_config_id AND c.active AND c.running_item_id IS NULL
            AND c.paused_at IS NULL
            AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
        )
      )
    ORDER BY w.requested_at, w.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), unscoped AS (
    SELECT u.id, u.requested_at
    FROM work_items u
    WHERE NOT EXISTS (SELECT 1 FROM fast)
      AND u.status = 'queued' AND u.storage_config_id IS NULL AND u.kind = ANY((SELECT kinds FROM claimable)::text[])
      AND (u.not_before IS NULL OR u.not_before <= (SELECT at FROM due))
    ORDER BY u.requested_at, u.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), scoped AS (
    SELECT w.id, w.requested_at
    FROM work_items w
    WHERE NOT EXISTS (SELECT 1 FROM fast)
      AND w.status = 'queued' AND (w.not_before IS NULL OR w.not_before <= (SELECT at FROM due))
      AND w.id IN (
        SELECT head.id
        FROM storage_configs c
        CROSS JOIN LATERAL (
            SELECT q.id
            FROM work_items q
            WHERE q.storage_config_id = c.id AND q.status = 'queued' AND q.kind = ANY((SELECT kinds FROM claimable)::text[])
              AND (q.not_before IS NULL OR q.not_before <= (SELECT at FROM due))
            ORDER BY q.requested_at, q.id
            LIMIT 1
        ) head
        WHERE c.active AND c.running_item_id IS NULL AND c.paused_at IS NULL
          AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
      )
    ORDER BY w.requested_at, w.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT id, row_number() OVER (ORDER BY requested_at, id) AS nth
    FROM (
        SELECT * FROM fast UNION ALL SELECT * FROM unscoped UNION ALL SELECT * FROM scoped
        ORDER BY requested_at, id
        LIMIT %(limit)s
    ) candidates
), claimed AS (
    UPDATE work_items w
    SET status = 'running',
        attempt = w.attempt + 1,
        worker_id = (%(worker_ids)s::text[])[pick.nth],
        started_at = (SELECT at FROM stamp),
        heartbeat_at = (SELECT at FROM stamp),
        lease_expires_at = (SELECT at FROM stamp) + make_interval(secs => %(lease_seconds)s),
        cancel_requested = false,
        error = NULL,
        not_before = NULL
    FROM pick
    WHERE w.id = pick.id
    RETURNING w.*, pick.nth
), history AS (
    INSERT INTO work_attempts (work_item_id, attempt, worker_id, storage_config_id, claimed_at)
    SELECT id, attempt, worker_id, storage_config_id,
           coalesce(%(now)s::timestamptz, clock_timestamp())
    FROM claimed
)
SELECT * FROM claimed

-- attempt_heartbeat --
-- Renew an attempt's lease, saving its progress if it reported more; no row: it lost the item.
-- One stamp for both columns, read before any wait for the row: a lease counted from
-- earlier only ends earlier, and it still starts after the beat was sent. progress is
-- NULL when the handler reported nothing new since the last save (migration 0010).
WITH stamp AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
)
UPDATE work_items
SET heartbeat_at = (SELECT at FROM stamp),
    lease_expires_at = (SELECT at FROM stamp) + make_interval(secs => %(lease_seconds)s),
    progress = coalesce(%(progress)s::jsonb, progress)
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
RETURNING cancel_requested

-- attempt_progress_save --
-- Save what a running attempt has done (its last report), right before its outcome's write.
-- Fenced like that write: no row means the attempt lost the item, and nothing changes.
UPDATE work_items
SET progress = %(progress)s::jsonb
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
RETURNING id

-- attempts_finish --
-- End running attempts: succeeded, failed or cancelled (each fenced), and record them.
-- One JSON object per attempt in endings; a row back for each attempt that still held its item.
-- endings is one JSON array of {id, attempt, status, result, error} (a JSON null result
-- or error is SQL NULL): one parameter, which the client dumps far faster than five
-- arrays (docs/benchmarks.md, issue #18).
-- finished_at is read as each row is written (PostgreSQL computes it again after
-- waiting for a row another statement changed), and ended_at is the same time.
WITH ending AS (
    SELECT *
    FROM jsonb_to_recordset(%(endings)s::jsonb)
        AS e(id bigint, attempt integer, status text, result jsonb, error text)
), finished AS (
    UPDATE work_items w
    SET status = e.status::work_status,
        finished_at = coalesce(%(now)s::timestamptz, clock_timestamp()),
        lease_expires_at = NULL,
        result = e.result,
        error = e.error
    FROM ending e
    WHERE w.id = e.id AND w.attempt = e.attempt AND w.status = 'running'
    RETURNING w.id, w.attempt, e.status, w.finished_at
)
UPDATE work_attempts a
SET ended_at = f.finished_at, outcome = f.status::attempt_outcome
FROM finished f
WHERE a.work_item_id = f.id AND a.attempt = f.attempt
RETURNING a.work_item_id, a.attempt

-- attempt_release --
-- Put a running attempt's item back to queued without a stall (graceful shutdown).
WITH released AS (
    UPDATE work_items
    SET status = 'queued', lease_expires_at = NULL, worker_id = NULL, cancel_requested = false
    WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
    RETURNING id, attempt
)
UPDATE work_attempts a
SET ended_at = coalesce(%(now)s::timestamptz, clock_timestamp()), outcome = 'released'
FROM released r
WHERE a.work_item_id = r.id AND a.attempt = r.attempt
RETURNING a.work_item_id

-- attempt_retry --
-- Put an interrupted attempt's item back to queued in its place with one more stall (fenced).
-- The same decision as item_recover_expired_lease (taken_back_status, migration 0006): failed
-- once it reaches max_stalls, ended as superseded when its dedup key already has a
-- queued item (dedup_key_queued, migration 0020), else queued.
WITH current AS (
    SELECT id, attempt, stalls, dedup_key
    FROM work_items
    WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
    FOR UPDATE
), decided AS (
    SELECT c.id, c.attempt, taken_back_status(c.stalls, c.dedup_key, %(max_stalls)s) AS new_status
    FROM current c
), retried AS (
    UPDATE work_items w
    SET status = d.new_status::work_status,
        stalls = w.stalls + 1,
        lease_expires_at = NULL,
        worker_id = NULL,
        cancel_requested = false,
        finished_at = CASE WHEN d.new_status = 'queued' THEN NULL
            ELSE coalesce(%(now)s::timestamptz, clock_timestamp()) END,
        error = CASE d.new_status
            WHEN 'failed' THEN format('interrupted %%s times; last: %%s', w.stalls + 1, %(error)s::text)
            WHEN 'cancelled' THEN superseded_error()
            ELSE %(error)s::text
        END
    FROM decided d
    WHERE w.id = d.id
    RETURNING w.id, w.attempt, d.new_status, w.finished_at
), history AS (
    UPDATE work_attempts a
    SET ended_at = coalesce(r.finished_at, %(now)s::timestamptz, clock_timestamp()),
        outcome = CASE r.new_status WHEN 'cancelled' THEN 'superseded' ELSE 'stalled' END::attempt_outcome
    FROM retried r
    WHERE a.work_item_id = r.id AND a.attempt = r.attempt
)
SELECT new_status FROM retried

-- attempt_retry_later --
-- Put a failed attempt's item back to queued until its backoff has passed, one more retry (fenced).
-- The executor decided it may be retried (safelight.work.retry: a failure that may pass,
-- attempts left). Superseded instead (cancelled, as lease recovery does) when its dedup
-- key already has a queued item (dedup_key_queued, migration 0020: the rule's one
-- definition, which taken_back_status uses too). One stamp, read once the row is
-- locked: not_before is it plus the backoff, an interval added here to the database's
-- clock (ADR 0015), never to a Worker's; the attempt's ended_at is the same stamp, and
-- its outcome 'failed'.
-- Deferred (ADR 0060: counted false): the same, for an attempt that wound down at the end
-- of its heavy hours, not a failure: no retry counted, its attempt ended 'released',
-- not_before the window's next start.
WITH stamp AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
), current AS (
    SELECT id, attempt, dedup_key
    FROM work_items
    WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
    FOR UPDATE
), decided AS (
    SELECT c.id, c.attempt,
           CASE WHEN dedup_key_queued(c.dedup_key) THEN 'cancelled' ELSE 'queued' END AS new_status
    FROM current c
), retried AS (
    UPDATE work_items w
    SET status = d.new_status::work_status,
        retries = w.retries + CASE WHEN %(counted)s THEN 1 ELSE 0 END,
        not_before = CASE WHEN d.new_status = 'queued'
            THEN (SELECT at FROM stamp) + make_interval(secs => %(delay_seconds)s) END,
        lease_expires_at = NULL,
        worker_id = NULL,
        cancel_requested = false,
        finished_at = CASE WHEN d.new_status = 'queued' THEN NULL ELSE (SELECT at FROM stamp) END,
        error = CASE d.new_status
            WHEN 'cancelled' THEN superseded_error()
            ELSE %(error)s::text
        END
    FROM decided d
    WHERE w.id = d.id
    RETURNING w.id, w.attempt, d.new_status
), history AS (
    UPDATE work_attempts a
    SET ended_at = (SELECT at FROM stamp),
        outcome = CASE WHEN r.new_status = 'cancelled' THEN 'superseded'
                       WHEN %(counted)s THEN 'failed' ELSE 'released' END::attempt_outcome
    FROM retried r
    WHERE a.work_item_id = r.id AND a.attempt = r.attempt
)
SELECT new_status FROM retried

-- attempt_lock --
-- Fence a handler's transaction: the attempt still owns the item and its lease holds.
-- FOR SHARE conflicts with recovery's UPDATE, so either recovery waits for this
-- transaction to end, or this one sees the item gone.
SELECT 1 FROM work_items
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
  AND lease_expires_at > coalesce(%(now)s::timestamptz, clock_timestamp())
FOR SHARE

-- item_recover_expired_lease --
-- Take back one running item whose lease expired: requeue it in its place with one
-- more stall, fail it once it reaches max_stalls, or end it as superseded when its
-- dedup key already has a queued item (taken_back_status, migrations 0006 and 0020).
-- One stamp, read once (an InitPlan, so ix_work_items_running_lease still serves the
-- comparison): the lease expired before it, and it is the attempt's ended_at. Leases
-- and this stamp are both the database's clock, so no Worker's clock skews recovery.
WITH stamp AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
), expired AS (
    SELECT id, attempt, stalls, dedup_key
    FROM work_items
    WHERE status = 'running' AND lease_expires_at < (SELECT at FROM stamp)
    ORDER BY lease_expires_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), decided AS (
    SELECT e.id, e.attempt, taken_back_status(e.stalls, e.dedup_key, %(max_stalls)s) AS new_status
    FROM expired e
), recovered AS (
    UPDATE work_items w
    SET status = d.new_status::work_status,
        stalls = w.stalls + 1,
        lease_expires_at = NULL,
        worker_id = NULL,
        cancel_requested = false,
        finished_at = CASE WHEN d.new_status = 'queued' THEN NULL ELSE (SELECT at FROM stamp) END,
        error = CASE d.new_status
            WHEN 'failed' THEN format('stalled: the lease expired %%s times', w.stalls + 1)
            WHEN 'cancelled' THEN superseded_error()
        END
    FROM decided d
    WHERE w.id = d.id
    RETURNING w.id, w.attempt, d.new_status
), history AS (
    UPDATE work_attempts a
    SET ended_at = (SELECT at FROM stamp),
        outcome = CASE r.new_status WHEN 'cancelled' THEN 'superseded' ELSE 'stalled' END::attempt_outcome
    FROM recovered r
    WHERE a.work_item_id = r.id AND a.attempt = r.attempt
)
SELECT id, new_status FROM recovered

-- item_request_cancel --
-- Cancel a queued item at once, or flag a running one and notify its attempt.
-- A running item's flag is read by its attempt's next heartbeat; the notification on
-- %(channel)s, "id:attempt", sent as this commits, stops that attempt at once in a
-- Worker process that hears it (ADR 0070).
WITH flagged AS (
    UPDATE work_items
    SET status = CASE WHEN status = 'queued' THEN 'cancelled'::work_status ELSE status END,
        not_before = NULL,
        finished_at = CASE WHEN status = 'queued'
            THEN coalesce(%(now)s::timestamptz, clock_timestamp()) ELSE finished_at END,
        error = CASE WHEN status = 'queued' THEN 'cancelled before it ran' ELSE error END,
        cancel_requested = (status = 'running')
    WHERE id = %(id)s AND status IN ('queued', 'running')
    RETURNING id, attempt, status
)
SELECT status,
    CASE WHEN status = 'running'
        THEN pg_notify(%(channel)s, id || ':' || attempt)::text END AS notified
FROM flagged

-- item_retry_failed --
-- Put one failed item back to queued, due now, its retries and stalls counted afresh; no row if it is not failed or its dedup key is queued.
-- An operator's retry (safelight items retry ID): it keeps its place (requested_at)
-- and its last error until it is claimed, as a retried attempt's item does.
UPDATE work_items w
SET status = 'queued', finished_at = NULL, result = NULL, not_before = NULL,
    retries = 0, stalls = 0
WHERE w.id = %(id)s AND w.status = 'failed' AND NOT dedup_key_queued(w.dedup_key)
RETURNING w.id

-- items_retry_failed --
-- Put the failed items of a kind and a config (NULL: any) back to queued, as item_retry_failed does; how many, and how many stay failed.
-- Of the failed items that share a dedup key only the newest is requeued, and none whose
-- key already has a queued item (dedup_key_queued, migration 0020;
-- ix_work_items_dedup_key_queued): the rest stay failed.
WITH matching AS (
    SELECT w.id, w.dedup_key
    FROM work_items w
    WHERE w.status = 'failed'
      AND (%(kind)s::text IS NULL OR w.kind = %(kind)s::text)
      AND (%(config_id)s::uuid IS NULL OR w.storage_config_id = %(config_id)s::uuid)
), chosen AS (
    SELECT m.id FROM matching m WHERE m.dedup_key IS NULL
    UNION ALL
    (
        SELECT DISTINCT ON (m.dedup_key) m.id
        FROM matching m
        WHERE m.dedup_key IS NOT NULL AND NOT dedup_key_queued(m.dedup_key)
        ORDER BY m.dedup_key, m.id DESC
    )
), retried AS (
    UPDATE work_items w
    SET status = 'queued', finished_at = NULL, result = NULL, not_before = NULL,
        retries = 0, stalls = 0
    FROM chosen c
    WHERE w.id = c.id AND w.status = 'failed'
    RETURNING w.id
)
SELECT (SELECT count(*) FROM retried) AS retried,
       (SELECT count(*) FROM matching) - (SELECT count(*) FROM retried) AS left_failed

-- item_by_id --
-- One item.
SELECT * FROM work_items WHERE id = %(id)s

-- attempts_of_item --
-- The attempt history of one item, oldest first.
SELECT * FROM work_attempts WHERE work_item_id = %(id)s ORDER BY attempt

-- items_delete_finished --
-- Delete a batch of finished items older than the cutoff (their attempts cascade).
DELETE FROM work_items
WHERE id IN (
    SELECT id FROM work_items
    WHERE finished_at IS NOT NULL AND finished_at < %(cutoff)s
    ORDER BY finished_at
    LIMIT %(batch)s
)

-- items_pending_for_worker --
-- How many items a Worker could still run are queued or running (for --until-idle).
-- A queued item of a paused kind or config is not counted: no Worker may take it until
-- it is resumed, so a run until idle does not wait for it (ADR 0060).
SELECT count(*)
FROM work_items w
LEFT JOIN storage_configs c ON c.id = w.storage_config_id
WHERE (w.status = 'running' OR (w.status = 'queued' AND c.paused_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM paused_kinds p WHERE p.kind = w.kind)))
  AND w.kind = ANY(%(kinds)s)
  AND (
    w.storage_config_id IS NULL
    OR ((%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
        AND (c.active OR w.status = 'running'))
  )

-- items_next_due --
-- Seconds until the earliest not-before still ahead among the queued items a Worker could run; NULL if none waits.
-- The Worker's wake-up timer (ADR 0024): a retry falls due with no notification. Read
-- on the database's clock, as the claim compares not_before, so no Worker's clock skews
-- it; the Worker sleeps that long on its own monotonic clock.
WITH stamp AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
)
SELECT extract(epoch FROM min(w.not_before) - (SELECT at FROM stamp))::float8 AS seconds
FROM work_items w
LEFT JOIN storage_configs c ON c.id = w.storage_config_id
WHERE w.status = 'queued' AND w.not_before > (SELECT at FROM stamp)
  AND w.kind = ANY(%(kinds)s)
  AND (
    w.storage_config_id IS NULL
    OR (c.active AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text))
  )

-- configs_active_ids --
-- The active storage configs, optionally of one owner (the scheduler's per-config kinds).
SELECT id FROM storage_configs
WHERE active AND (%(owner)s::text IS NULL OR owner = %(owner)s::text)
ORDER BY created_at, id

-- schedule_seed --
-- Make sure a schedule exists; a new one is due at once.
INSERT INTO work_schedules (name, kind, storage_config_id, next_run_at)
VALUES (%(name)s, %(kind)s, %(config_id)s, %(now)s)
ON CONFLICT (name) DO NOTHING

-- schedule_take_due --
-- Move a due schedule to its next period; a row back means this Worker schedules it.
UPDATE work_schedules
SET next_run_at = %(now)s + make_interval(secs => %(interval_seconds)s), last_run_at = %(now)s
WHERE name = %(name)s AND next_run_at <= %(now)s
RETURNING name
