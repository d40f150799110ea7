-- The Workers of every running Worker process, as last seen (safelight.observe.presence).
-- Each process writes its Workers' rows every recovery interval and deletes them when it
-- stops cleanly; `safelight health` fails when no row was written recently. The queue's
-- own columns cannot tell: an idle Worker's claims find nothing and write nothing.
-- A process that died leaves its rows behind, last seen when it died; they are deleted
-- once older than the work retention.
CREATE TABLE workers (
    worker_id    text PRIMARY KEY,
    started_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL
);
CREATE INDEX ix_workers_last_seen_at ON workers (last_seen_at);
