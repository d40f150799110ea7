-- The claim's first look: the oldest queued items of every scope, in queue order, so
-- that a claim finds the oldest eligible item in a few index entries whenever it is
-- near the head of the queue, however many configs there are (queries.sql,
-- claim_item; measured by bench/claim.py).
CREATE INDEX ix_work_items_queued ON work_items (requested_at, id) WHERE status = 'queued';
