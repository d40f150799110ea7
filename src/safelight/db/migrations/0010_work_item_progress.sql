-- What the current (or last) attempt of an item has done so far, as its handler reported
-- it: {"attempt": N, "counts": {"found": 133, "ingested": 133, "proxies": 399, ...}}.
-- Saved with the attempt's heartbeats and once more when it ends, each write fenced by
-- (id, attempt) and status = 'running' like every write of an attempt, so an attempt
-- interrupted by Ctrl-C (released), stopped, or killed still says what it did. NULL
-- until an attempt of the item reports progress; kinds that report none leave it NULL.
ALTER TABLE work_items ADD COLUMN progress jsonb;
