-- The claim's first look: the oldest queued items of every scope, in queue order, so
-- that a claim finds the oldest eligible item in a few index entries whenever it is
-- near the head of the queue, however many configs there are (queries.sql,
-- claim_item; measured by bench/claim.py).
--
-- Its predicate also names attempt >= 0, always true (a CHECK of work_items), so that
-- only a query that says so can use it. The claim's per-config heads must keep to
-- ix_work_items_queued_by_config: were this index usable there, the planner would walk
-- the whole queue in order to find the head of a config with few items whenever the
-- statistics show few configs (45 ms behind 100k items of one busy config, against
-- 0.05 ms for one probe of the per-config index).
CREATE INDEX ix_work_items_queue_order ON work_items (requested_at, id)
    WHERE status = 'queued' AND attempt >= 0;
