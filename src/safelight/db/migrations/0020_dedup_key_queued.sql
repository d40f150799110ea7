-- Issue #29: "its dedup key already has a queued item" had four owners: taken_back_status
-- (migration 0006) and three inline copies in work/queries.sql (attempt_retry_later,
-- item_retry_failed, items_retry_failed). It is defined here once, and they all call it:
-- an item taken back from its attempt (lease recovery, retry, retry later) whose key is
-- queued is ended as superseded instead of requeued, and a failed item whose key is
-- queued stays failed on an operator's retry; either way the queued item does its work,
-- and a second queued item of the key would break ix_work_items_dedup_key_queued.
-- STABLE: it reads work_items in the calling statement's snapshot, as the inline EXISTS
-- did. PL/pgSQL, whose body is checked when first run, so docs/schema.sql can create it
-- before the tables.
CREATE FUNCTION dedup_key_queued(item_dedup_key text)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN item_dedup_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM work_items q WHERE q.dedup_key = item_dedup_key AND q.status = 'queued'
    );
END
$$;

-- Unchanged in what it returns; the rule is now the function's.
CREATE OR REPLACE FUNCTION taken_back_status(
    item_stalls integer, item_dedup_key text, max_stalls integer
)
RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF item_stalls + 1 >= max_stalls THEN
        RETURN 'failed';
    END IF;
    IF dedup_key_queued(item_dedup_key) THEN
        RETURN 'cancelled';
    END IF;
    RETURN 'queued';
END
$$;

-- The error an item ended as superseded is left with, by all three that end one.
CREATE FUNCTION superseded_error() RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'superseded: its dedup key already had a queued item'
$$;
