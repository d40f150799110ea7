-- Each storage config names its running item, kept by a trigger on every change of an
-- item's status (ADR 0011), so that a claim finds the idle configs in their own index
-- instead of reading every running item and every config (bench/claim.py: 4.2x the
-- one-item claim with 1,000 busy configs before this).
--
-- A hint for the claim, not the rule: ix_work_items_storage_config_running still
-- rejects a second running item of a config. The column is written in the same
-- transaction as the item's status, so every snapshot sees the two agree.

ALTER TABLE storage_configs ADD COLUMN running_item_id bigint;

UPDATE storage_configs c
SET running_item_id = w.id
FROM work_items w
WHERE w.storage_config_id = c.id AND w.status = 'running';

-- The configs a claim may take a head from: active, with nothing running.
CREATE INDEX ix_storage_configs_idle ON storage_configs (id)
    WHERE active AND running_item_id IS NULL;

-- Into running: the config names the item. Out of running, or deleted while running:
-- the config names none. A config has at most one running item (the unique index), and
-- a second can be set running only once the first one's end has committed, so these
-- writes to one config never interleave.
CREATE FUNCTION track_config_running_item() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.status = 'running' THEN
        UPDATE storage_configs SET running_item_id = NULL WHERE id = OLD.storage_config_id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.status = 'running' THEN
        UPDATE storage_configs SET running_item_id = NEW.id
        WHERE id = NEW.storage_config_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER work_items_track_running_insert
    AFTER INSERT ON work_items
    FOR EACH ROW WHEN (NEW.status = 'running' AND NEW.storage_config_id IS NOT NULL)
    EXECUTE FUNCTION track_config_running_item();

CREATE TRIGGER work_items_track_running_update
    AFTER UPDATE OF status ON work_items
    FOR EACH ROW WHEN (
        NEW.storage_config_id IS NOT NULL
        AND (OLD.status = 'running') <> (NEW.status = 'running')
    )
    EXECUTE FUNCTION track_config_running_item();

CREATE TRIGGER work_items_track_running_delete
    AFTER DELETE ON work_items
    FOR EACH ROW WHEN (OLD.status = 'running' AND OLD.storage_config_id IS NOT NULL)
    EXECUTE FUNCTION track_config_running_item();
