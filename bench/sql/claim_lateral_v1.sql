-- claim_item --
-- Take the oldest eligible queued item and make it this attempt's, with a lease.
-- Eligible: a kind this Worker runs; unscoped, or of an active config it serves that
-- has no running item. The scoped branch looks only at the head of each idle config's
-- queue, so the claim costs one index probe per config, however many items of busy
-- configs wait ahead (a NOT EXISTS over the queue would walk all of them). Hazard: two
-- claimers can pass the NOT EXISTS for one config at once (neither sees the other's
-- uncommitted running row); ix_work_items_storage_config_running rejects the second.
WITH unscoped AS (
    SELECT u.id, u.requested_at
    FROM work_items u
    WHERE u.status = 'queued' AND u.storage_config_id IS NULL AND u.kind = ANY(%(kinds)s)
    ORDER BY u.requested_at, u.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), scoped AS (
    SELECT w.id, w.requested_at
    FROM work_items w
    WHERE w.status = 'queued'
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
        WHERE c.active
          AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
          AND NOT EXISTS (
            SELECT 1 FROM work_items r
            WHERE r.storage_config_id = c.id AND r.status = 'running'
          )
      )
    ORDER BY w.requested_at, w.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT id FROM (SELECT * FROM unscoped UNION ALL SELECT * FROM scoped) candidates
    ORDER BY requested_at, id
    LIMIT 1
), claimed AS (
    UPDATE work_items w
    SET status = 'running',
        attempt = w.attempt + 1,
        worker_id = %(worker_id)s,
        started_at = %(now)s,
        heartbeat_at = %(now)s,
        lease_expires_at = %(now)s + make_interval(secs => %(lease_seconds)s),
        cancel_requested = false,
        error = NULL
    FROM pick
    WHERE w.id = pick.id
    RETURNING w.*
), history AS (
    INSERT INTO work_attempts (work_item_id, attempt, worker_id, storage_config_id, claimed_at)
    SELECT id, attempt, worker_id, storage_config_id, %(now)s FROM claimed
)
SELECT * FROM claimed

