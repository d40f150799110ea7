-- The engine: storage configs (the scope of scoped work), the queue, and its history.

CREATE TABLE storage_configs (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    owner       text        NOT NULL CHECK (owner <> ''),
    root_path   text        NOT NULL CHECK (root_path <> ''),
    active      boolean     NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL,
    UNIQUE (owner, root_path)
);

CREATE TYPE work_status AS ENUM ('queued', 'running', 'succeeded', 'failed', 'cancelled');

CREATE TABLE work_items (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind              text        NOT NULL CHECK (kind <> ''),
    -- NULL: unscoped work, which is not serialised against anything.
    storage_config_id uuid        REFERENCES storage_configs (id) ON DELETE CASCADE,
    dedup_key         text,
    payload           jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(payload) = 'object'),
    status            work_status NOT NULL DEFAULT 'queued',
    requested_at      timestamptz NOT NULL,
    -- How many times the item has been claimed; every write of an attempt is fenced by
    -- (id, attempt) and status = 'running'.
    attempt           integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    stalls            integer     NOT NULL DEFAULT 0 CHECK (stalls >= 0),
    worker_id         text,
    started_at        timestamptz,
    heartbeat_at      timestamptz,
    lease_expires_at  timestamptz,
    finished_at       timestamptz,
    cancel_requested  boolean     NOT NULL DEFAULT false,
    error             text,
    result            jsonb,
    CHECK ((status = 'running') = (lease_expires_at IS NOT NULL)),
    CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL))
);

-- One queued item per dedup key: enqueueing a periodic kind twice adds nothing.
CREATE UNIQUE INDEX ix_work_items_dedup_key_queued
    ON work_items (dedup_key) WHERE status = 'queued' AND dedup_key IS NOT NULL;

-- The rule of ADR 0008 as a schema invariant: at most one running item per storage
-- config. The claim passes over busy configs (NOT EXISTS); this index rejects the
-- second of two claims that raced past that check, and binds any future path that
-- sets an item running. The claim recognises the violation by this index's name.
CREATE UNIQUE INDEX ix_work_items_storage_config_running
    ON work_items (storage_config_id) WHERE status = 'running' AND storage_config_id IS NOT NULL;

-- The claim's scans: the head of each config's queue, and the head of unscoped work.
CREATE INDEX ix_work_items_queued_by_config
    ON work_items (storage_config_id, requested_at, id) WHERE status = 'queued';
CREATE INDEX ix_work_items_queued_unscoped
    ON work_items (requested_at, id) WHERE status = 'queued' AND storage_config_id IS NULL;
-- Lease recovery, and retention of finished items.
CREATE INDEX ix_work_items_running_lease
    ON work_items (lease_expires_at) WHERE status = 'running';
CREATE INDEX ix_work_items_finished
    ON work_items (finished_at) WHERE finished_at IS NOT NULL;

CREATE TYPE attempt_outcome AS ENUM
    ('succeeded', 'failed', 'cancelled', 'released', 'stalled', 'superseded');

-- Every attempt, not just the last: written in the same statement as each transition.
CREATE TABLE work_attempts (
    work_item_id bigint          NOT NULL REFERENCES work_items (id) ON DELETE CASCADE,
    attempt      integer         NOT NULL CHECK (attempt > 0),
    worker_id    text            NOT NULL,
    -- Denormalised from the item so the history of a config can be read on its own.
    storage_config_id uuid,
    claimed_at   timestamptz     NOT NULL,
    -- For a stalled attempt: the moment recovery took the item back.
    ended_at     timestamptz,
    outcome      attempt_outcome,
    PRIMARY KEY (work_item_id, attempt),
    CHECK ((ended_at IS NULL) = (outcome IS NULL))
);
CREATE INDEX ix_work_attempts_config ON work_attempts (storage_config_id, claimed_at);

-- Wake Workers at once when there is work: an item became queued (enqueue, release,
-- lease recovery), or a config's running item ended, which frees that config.
CREATE FUNCTION notify_work_available() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Identical notifications within one transaction collapse into one.
    PERFORM pg_notify('safelight_work', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER work_items_notify_insert
    AFTER INSERT ON work_items
    FOR EACH ROW WHEN (NEW.status = 'queued')
    EXECUTE FUNCTION notify_work_available();

CREATE TRIGGER work_items_notify_update
    AFTER UPDATE OF status ON work_items
    FOR EACH ROW WHEN (
        NEW.status = 'queued'
        OR (OLD.status = 'running' AND NEW.status <> 'running' AND NEW.storage_config_id IS NOT NULL)
    )
    EXECUTE FUNCTION notify_work_available();

-- Periodic kinds: one row per schedule. The Worker that moves next_run_at forward, in
-- the same transaction as the enqueue, is the one that schedules that period, so any
-- number of Workers schedule each period exactly once.
CREATE TABLE work_schedules (
    name              text        PRIMARY KEY,
    kind              text        NOT NULL,
    storage_config_id uuid        REFERENCES storage_configs (id) ON DELETE CASCADE,
    next_run_at       timestamptz NOT NULL,
    last_run_at       timestamptz
);
