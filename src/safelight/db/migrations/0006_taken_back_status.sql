-- What becomes of a running item taken back from its attempt without an outcome of
-- its own: by lease recovery (the lease expired) or by retry (the handler hit a
-- transient database error). One decision for both (queries.sql,
-- recover_expired_lease and retry_attempt), so the two can never disagree:
-- 'failed' at its max_stalls-th stall; 'cancelled' (superseded) when its dedup key
-- already has a queued item, since requeueing it would break
-- ix_work_items_dedup_key_queued; else 'queued', back in its place.
-- STABLE: it reads work_items in the calling statement's snapshot. PL/pgSQL, whose
-- body is checked when first run, so docs/schema.sql can create it before the tables.
CREATE FUNCTION taken_back_status(item_stalls integer, item_dedup_key text, max_stalls integer)
RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF item_stalls + 1 >= max_stalls THEN
        RETURN 'failed';
    END IF;
    IF item_dedup_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM work_items q WHERE q.dedup_key = item_dedup_key AND q.status = 'queued'
    ) THEN
        RETURN 'cancelled';
    END IF;
    RETURN 'queued';
END
$$;
