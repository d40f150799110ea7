-- Retries (ADR 0024): an attempt that failed for a reason that may pass (an I/O error
-- of a NAS mount, a handler's Retryable) puts its item back to queued with a not-before
-- time, its kind's backoff, instead of failing it, until its kind's maximum attempts.
--
-- retries: how many failed attempts were put back so; a count of its own beside
-- stalls (leases that expired, transient database errors), which max_stalls bounds.
-- Neither uses up the other, and neither is derived from attempt, which also counts
-- releases (shutdown) and claims answered too late.
-- not_before: the database's time before which the claim passes the item over; NULL
-- for every item that is not waiting for a retry (the claim clears it).
ALTER TABLE work_items
    ADD COLUMN retries integer NOT NULL DEFAULT 0 CHECK (retries >= 0),
    ADD COLUMN not_before timestamptz,
    ADD CONSTRAINT work_items_not_before_queued CHECK (not_before IS NULL OR status = 'queued');

-- The Worker's wake-up timer: the earliest not-before still ahead (items_next_due).
-- Only items waiting for a retry are in it, so it stays as small as they are few. The
-- claim's own indexes are unchanged: a waiting item is passed over by a filter on the
-- rows they return (queries.sql, items_claim; bench/claim.py).
CREATE INDEX ix_work_items_queued_not_before
    ON work_items (not_before) WHERE status = 'queued' AND not_before IS NOT NULL;
