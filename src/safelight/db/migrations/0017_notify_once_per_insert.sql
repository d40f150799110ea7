-- Issue #18, item 2: an insert of many items wakes the Workers with one trigger call per
-- statement, not one per row. The row trigger of 0001 ran a PL/pgSQL call and a
-- pg_notify for every queued row of a batch (about a tenth of a bulk enqueue's time,
-- docs/benchmarks.md, 9); the notifications collapsed into one at commit anyway.
-- A statement-level trigger sees the rows a statement inserted in its transition
-- table: every INSERT of the statement into work_items (items_enqueue inserts through
-- two of its CTEs) is in one table, and the trigger fires once. An insert that added
-- nothing queued (a dedup key already held, ON CONFLICT DO NOTHING) notifies no one,
-- as before. The update trigger stays a row trigger: a column list (UPDATE OF status)
-- and a transition table cannot go together, and its WHEN keeps claims from calling it.
DROP TRIGGER work_items_notify_insert ON work_items;

CREATE FUNCTION notify_work_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted WHERE status = 'queued') THEN
        PERFORM pg_notify('safelight_work', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER work_items_notify_insert
    AFTER INSERT ON work_items
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT
    EXECUTE FUNCTION notify_work_inserted();
