-- The claim as it was before migration 0008 (safelight's items_claim at 7449a0f, before
-- retries added their not-before filter), timed beside the current one by bench/claim.py.

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
-- tenth of the table, and PostgreSQL would plan every claim anew).
-- Hazard: two claimers can pass the running check for one config at once (neither
-- sees the other's uncommitted running_item_id); ix_work_items_storage_config_running
-- rejects one.
-- Times (ADR 0015): the item's started_at, heartbeat_at and lease come from "stamp",
-- read once the statement has locked its picks (the lease only ever starts after the
-- claim was sent, so the executor's self-stop keeps its half lease). The attempt's
-- claimed_at is read per row in "history", after the item's row passed the running
-- index: a claim that waited there for the end of its config's previous attempt is
-- stamped after that end committed, so the history's intervals of a config never meet.
-- Only the description line is sent (safelight.core.sql): under 4096 characters, or
-- psycopg re-parses it on every call.
WITH stamp AS MATERIALIZED (
    SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS at
), fast AS (
    SELECT w.id, w.requested_at
    FROM work_items w
    WHERE w.status = 'queued'
      AND w.id IN (
        SELECT h.id
        FROM (
            SELECT q.id, q.storage_config_id, row_number() OVER (
                PARTITION BY q.storage_config_id ORDER BY q.requested_at, q.id
            ) AS nth
            FROM (
                SELECT q.id, q.storage_config_id, q.requested_at
                FROM work_items q
                WHERE q.status = 'queued' AND q.attempt >= 0 AND q.kind = ANY(%(kinds)s)
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
      AND u.status = 'queued' AND u.storage_config_id IS NULL AND u.kind = ANY(%(kinds)s)
    ORDER BY u.requested_at, u.id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), scoped AS (
    SELECT w.id, w.requested_at
    FROM work_items w
    WHERE NOT EXISTS (SELECT 1 FROM fast)
      AND w.status = 'queued'
      AND w.id IN (
        SELECT head.id
        FROM storage_configs c
        CROSS JOIN LATERAL (
            SELECT q.id
            FROM work_items q
            WHERE q.storage_config_id = c.id AND q.status = 'queued' AND q.kind = ANY(%(kinds)s)
            ORDER BY q.requested_at, q.id
            LIMIT 1
        ) head
        WHERE c.active AND c.running_item_id IS NULL
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
        error = NULL
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

