-- The full current schema of safelight, dumped from a database with every migration
-- applied (scripts/dump_schema.py). Do not edit: write a migration, then regenerate.
-- tests/integration/test_migrations.py fails when this file is stale.

CREATE TYPE public.attempt_outcome AS ENUM (
    'succeeded',
    'failed',
    'cancelled',
    'released',
    'stalled',
    'superseded'
);

CREATE TYPE public.work_status AS ENUM (
    'queued',
    'running',
    'succeeded',
    'failed',
    'cancelled'
);

CREATE FUNCTION public.dedup_key_queued(item_dedup_key text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN item_dedup_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM work_items q WHERE q.dedup_key = item_dedup_key AND q.status = 'queued'
    );
END
$$;

CREATE FUNCTION public.notify_work_available() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- Identical notifications within one transaction collapse into one.
    PERFORM pg_notify('safelight_work', '');
    RETURN NULL;
END
$$;

CREATE FUNCTION public.notify_work_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted WHERE status = 'queued') THEN
        PERFORM pg_notify('safelight_work', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.superseded_error() RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT 'superseded: its dedup key already had a queued item'
$$;

CREATE FUNCTION public.taken_back_status(item_stalls integer, item_dedup_key text, max_stalls integer) RETURNS text
    LANGUAGE plpgsql STABLE
    AS $$
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

CREATE FUNCTION public.track_config_running_item() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE TABLE public.asset_duplicates (
    storage_config_id uuid NOT NULL,
    file_path text NOT NULL,
    asset_id bigint NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL
);

CREATE TABLE public.asset_errors (
    storage_config_id uuid NOT NULL,
    file_path text NOT NULL,
    reason text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    failures integer DEFAULT 1 NOT NULL,
    size bigint,
    modified_ns bigint,
    inode bigint,
    retry_after timestamp with time zone,
    CONSTRAINT asset_errors_size_check CHECK ((size >= 0))
);

CREATE TABLE public.assets (
    id bigint NOT NULL,
    storage_config_id uuid NOT NULL,
    file_path text NOT NULL,
    file_name text NOT NULL,
    content_hash text NOT NULL,
    size_bytes bigint NOT NULL,
    modified_at timestamp with time zone NOT NULL,
    modified_ns bigint NOT NULL,
    media_type text NOT NULL,
    captured_at timestamp with time zone NOT NULL,
    captured_local timestamp without time zone NOT NULL,
    captured_at_source text NOT NULL,
    captured_year smallint NOT NULL,
    captured_month smallint NOT NULL,
    captured_day smallint NOT NULL,
    camera_make text,
    camera_model text,
    width integer,
    height integer,
    orientation smallint,
    duration_seconds double precision,
    maker_burst_id text,
    content_identifier text,
    sequence_number integer,
    burst_id bigint,
    paired_asset_id bigint,
    is_deleted boolean DEFAULT false NOT NULL,
    deleted_at timestamp with time zone,
    last_seen_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL,
    latitude double precision,
    longitude double precision,
    altitude_m double precision,
    stack_primary_id bigint,
    motion_photo boolean DEFAULT false NOT NULL,
    motion_photo_issue text,
    sidecar_path text,
    sidecar_size bigint,
    sidecar_modified_ns bigint,
    read_note text,
    stack_kind text,
    content_checked_at timestamp with time zone,
    content_mismatch_at timestamp with time zone,
    content_found_hash text,
    place_city text,
    place_region text,
    place_country text,
    place_country_code text,
    places_checked_at timestamp with time zone,
    time_zone text,
    zone_source text,
    picture_hash bigint,
    picture_hashed_at timestamp with time zone,
    similar_group_id bigint,
    faces_content_hash text,
    CONSTRAINT assets_captured_at_source_check CHECK ((captured_at_source = ANY (ARRAY['sidecar'::text, 'exif'::text, 'xmp'::text, 'iptc'::text, 'maker'::text, 'modified'::text, 'png'::text, 'video'::text, 'file'::text]))),
    CONSTRAINT assets_captured_day_check CHECK (((captured_day >= 1) AND (captured_day <= 31))),
    CONSTRAINT assets_captured_month_check CHECK (((captured_month >= 1) AND (captured_month <= 12))),
    CONSTRAINT assets_check CHECK ((is_deleted = (deleted_at IS NOT NULL))),
    CONSTRAINT assets_content_found_hash_check CHECK ((content_found_hash ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT assets_content_hash_check CHECK ((content_hash ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT assets_faces_content_hash_check CHECK ((faces_content_hash ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT assets_file_path_check CHECK (((file_path <> ''::text) AND ("left"(file_path, 1) <> '/'::text))),
    CONSTRAINT assets_latitude_check CHECK (((latitude >= ('-90'::integer)::double precision) AND (latitude <= (90)::double precision))),
    CONSTRAINT assets_location_whole CHECK (((latitude IS NULL) = (longitude IS NULL))),
    CONSTRAINT assets_longitude_check CHECK (((longitude >= ('-180'::integer)::double precision) AND (longitude <= (180)::double precision))),
    CONSTRAINT assets_media_type_check CHECK ((media_type = ANY (ARRAY['image'::text, 'video'::text]))),
    CONSTRAINT assets_orientation_check CHECK (((orientation >= 1) AND (orientation <= 8))),
    CONSTRAINT assets_place_country_code_check CHECK ((place_country_code ~ '^[A-Z]{2}$'::text)),
    CONSTRAINT assets_sidecar_size_check CHECK ((sidecar_size >= 0)),
    CONSTRAINT assets_sidecar_whole CHECK ((((sidecar_path IS NULL) = (sidecar_size IS NULL)) AND ((sidecar_path IS NULL) = (sidecar_modified_ns IS NULL)))),
    CONSTRAINT assets_size_bytes_check CHECK ((size_bytes > 0)),
    CONSTRAINT assets_stack_kind_check CHECK ((stack_kind = ANY (ARRAY['raw'::text, 'format'::text, 'copy'::text]))),
    CONSTRAINT assets_time_zone_check CHECK ((time_zone <> ''::text)),
    CONSTRAINT assets_zone_source_check CHECK ((zone_source = ANY (ARRAY['file'::text, 'position'::text]))),
    CONSTRAINT ck_assets_motion_photo_is_an_image CHECK (((NOT motion_photo) OR (media_type = 'image'::text)))
);

ALTER TABLE public.assets ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.assets_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.auth_tokens (
    id bigint NOT NULL,
    user_name text NOT NULL,
    token_hash text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone
);

ALTER TABLE public.auth_tokens ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.auth_tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.bursts (
    id bigint NOT NULL,
    storage_config_id uuid NOT NULL,
    burst_key text NOT NULL,
    primary_asset_id bigint,
    created_at timestamp with time zone NOT NULL
);

ALTER TABLE public.bursts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.bursts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.faces (
    id bigint NOT NULL,
    asset_id bigint NOT NULL,
    storage_config_id uuid NOT NULL,
    box_left real NOT NULL,
    box_top real NOT NULL,
    box_right real NOT NULL,
    box_bottom real NOT NULL,
    descriptor bytea NOT NULL,
    person_id bigint,
    placed_by text DEFAULT 'cluster'::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT faces_box_bottom_check CHECK (((box_bottom >= (0)::double precision) AND (box_bottom <= (1)::double precision))),
    CONSTRAINT faces_box_left_check CHECK (((box_left >= (0)::double precision) AND (box_left <= (1)::double precision))),
    CONSTRAINT faces_box_right_check CHECK (((box_right >= (0)::double precision) AND (box_right <= (1)::double precision))),
    CONSTRAINT faces_box_tall CHECK ((box_bottom > box_top)),
    CONSTRAINT faces_box_top_check CHECK (((box_top >= (0)::double precision) AND (box_top <= (1)::double precision))),
    CONSTRAINT faces_box_wide CHECK ((box_right > box_left)),
    CONSTRAINT faces_descriptor_check CHECK ((length(descriptor) = 512)),
    CONSTRAINT faces_placed_by_check CHECK ((placed_by = ANY (ARRAY['cluster'::text, 'person'::text])))
);

ALTER TABLE public.faces ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.faces_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.paused_kinds (
    kind text NOT NULL,
    paused_at timestamp with time zone NOT NULL,
    paused_by text,
    CONSTRAINT paused_kinds_kind_check CHECK ((kind <> ''::text))
);

CREATE TABLE public.people (
    id bigint NOT NULL,
    storage_config_id uuid NOT NULL,
    name text,
    named_by text,
    named_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT people_name_check CHECK (((name IS NULL) OR ((length(btrim(name)) >= 1) AND (length(btrim(name)) <= 200))))
);

ALTER TABLE public.people ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.people_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.proxy_files (
    id bigint NOT NULL,
    asset_id bigint NOT NULL,
    proxy_type text NOT NULL,
    path text,
    value text,
    size_bytes bigint,
    width integer,
    height integer,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT proxy_files_check CHECK (((proxy_type = 'blurhash'::text) = (path IS NULL))),
    CONSTRAINT proxy_files_check1 CHECK (((proxy_type = 'blurhash'::text) = (value IS NOT NULL))),
    CONSTRAINT proxy_files_proxy_type_check CHECK ((proxy_type = ANY (ARRAY['thumbnail'::text, 'full_preview'::text, 'blurhash'::text, 'web_video'::text])))
);

ALTER TABLE public.proxy_files ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.proxy_files_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.schema_migrations (
    version text NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    checksum text
);

CREATE TABLE public.similar_groups (
    id bigint NOT NULL,
    storage_config_id uuid NOT NULL,
    primary_asset_id bigint,
    created_at timestamp with time zone NOT NULL
);

ALTER TABLE public.similar_groups ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.similar_groups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.storage_configs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    owner text NOT NULL,
    root_path text NOT NULL,
    active boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone NOT NULL,
    running_item_id bigint,
    paused_at timestamp with time zone,
    paused_by text,
    CONSTRAINT storage_configs_owner_check CHECK ((owner <> ''::text)),
    CONSTRAINT storage_configs_root_path_check CHECK ((root_path <> ''::text))
);

CREATE TABLE public.users (
    id bigint NOT NULL,
    name text NOT NULL,
    is_admin boolean DEFAULT false NOT NULL,
    password_hash text,
    created_at timestamp with time zone NOT NULL,
    password_changed_at timestamp with time zone,
    CONSTRAINT users_name_check CHECK ((name <> ''::text))
);

ALTER TABLE public.users ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.web_sessions (
    id_digest bytea NOT NULL,
    user_id bigint NOT NULL,
    origin text NOT NULL,
    csrf_digest bytea NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE public.work_attempts (
    work_item_id bigint NOT NULL,
    attempt integer NOT NULL,
    worker_id text NOT NULL,
    storage_config_id uuid,
    claimed_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    outcome public.attempt_outcome,
    CONSTRAINT work_attempts_attempt_check CHECK ((attempt > 0)),
    CONSTRAINT work_attempts_check CHECK (((ended_at IS NULL) = (outcome IS NULL)))
);

CREATE TABLE public.work_items (
    id bigint NOT NULL,
    kind text NOT NULL,
    storage_config_id uuid,
    dedup_key text,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    status public.work_status DEFAULT 'queued'::public.work_status NOT NULL,
    requested_at timestamp with time zone NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    stalls integer DEFAULT 0 NOT NULL,
    worker_id text,
    started_at timestamp with time zone,
    heartbeat_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    finished_at timestamp with time zone,
    cancel_requested boolean DEFAULT false NOT NULL,
    error text,
    result jsonb,
    retries integer DEFAULT 0 NOT NULL,
    not_before timestamp with time zone,
    progress jsonb,
    CONSTRAINT work_items_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT work_items_check CHECK (((status = 'running'::public.work_status) = (lease_expires_at IS NOT NULL))),
    CONSTRAINT work_items_check1 CHECK (((status = ANY (ARRAY['succeeded'::public.work_status, 'failed'::public.work_status, 'cancelled'::public.work_status])) = (finished_at IS NOT NULL))),
    CONSTRAINT work_items_kind_check CHECK ((kind <> ''::text)),
    CONSTRAINT work_items_not_before_queued CHECK (((not_before IS NULL) OR (status = 'queued'::public.work_status))),
    CONSTRAINT work_items_payload_check CHECK ((jsonb_typeof(payload) = 'object'::text)),
    CONSTRAINT work_items_retries_check CHECK ((retries >= 0)),
    CONSTRAINT work_items_stalls_check CHECK ((stalls >= 0))
);

ALTER TABLE public.work_items ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.work_items_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.work_schedules (
    name text NOT NULL,
    kind text NOT NULL,
    storage_config_id uuid,
    next_run_at timestamp with time zone NOT NULL,
    last_run_at timestamp with time zone
);

CREATE TABLE public.workers (
    worker_id text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL
);

ALTER TABLE ONLY public.asset_duplicates
    ADD CONSTRAINT asset_duplicates_pkey PRIMARY KEY (storage_config_id, file_path);

ALTER TABLE ONLY public.asset_errors
    ADD CONSTRAINT asset_errors_pkey PRIMARY KEY (storage_config_id, file_path);

ALTER TABLE ONLY public.assets
    ADD CONSTRAINT assets_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT auth_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT auth_tokens_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.bursts
    ADD CONSTRAINT bursts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.bursts
    ADD CONSTRAINT bursts_storage_config_id_burst_key_key UNIQUE (storage_config_id, burst_key);

ALTER TABLE ONLY public.faces
    ADD CONSTRAINT faces_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.paused_kinds
    ADD CONSTRAINT paused_kinds_pkey PRIMARY KEY (kind);

ALTER TABLE ONLY public.people
    ADD CONSTRAINT people_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.people
    ADD CONSTRAINT people_storage_config_id_id_key UNIQUE (storage_config_id, id);

ALTER TABLE ONLY public.proxy_files
    ADD CONSTRAINT proxy_files_asset_id_proxy_type_key UNIQUE (asset_id, proxy_type);

ALTER TABLE ONLY public.proxy_files
    ADD CONSTRAINT proxy_files_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY public.similar_groups
    ADD CONSTRAINT similar_groups_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.storage_configs
    ADD CONSTRAINT storage_configs_owner_root_path_key UNIQUE (owner, root_path);

ALTER TABLE ONLY public.storage_configs
    ADD CONSTRAINT storage_configs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_name_key UNIQUE (name);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.web_sessions
    ADD CONSTRAINT web_sessions_pkey PRIMARY KEY (id_digest);

ALTER TABLE ONLY public.work_attempts
    ADD CONSTRAINT work_attempts_pkey PRIMARY KEY (work_item_id, attempt);

ALTER TABLE ONLY public.work_items
    ADD CONSTRAINT work_items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.work_schedules
    ADD CONSTRAINT work_schedules_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (worker_id);

CREATE INDEX ix_asset_duplicates_asset ON public.asset_duplicates USING btree (asset_id);

CREATE INDEX ix_assets_burst ON public.assets USING btree (burst_id) WHERE (burst_id IS NOT NULL);

CREATE INDEX ix_assets_deleted ON public.assets USING btree (storage_config_id) WHERE is_deleted;

CREATE INDEX ix_assets_hash ON public.assets USING btree (storage_config_id, content_hash);

CREATE UNIQUE INDEX ix_assets_live_content ON public.assets USING btree (storage_config_id, content_hash) WHERE (NOT is_deleted);

CREATE UNIQUE INDEX ix_assets_live_path ON public.assets USING btree (storage_config_id, file_path) WHERE (NOT is_deleted);

CREATE INDEX ix_assets_live_path_c ON public.assets USING btree (storage_config_id, file_path COLLATE "C") WHERE (NOT is_deleted);

CREATE INDEX ix_assets_on_this_day ON public.assets USING btree (captured_month, captured_day, captured_year, captured_local, id) WHERE (NOT is_deleted);

CREATE INDEX ix_assets_paired ON public.assets USING btree (paired_asset_id) WHERE (paired_asset_id IS NOT NULL);

CREATE INDEX ix_assets_picture_unhashed ON public.assets USING btree (storage_config_id, id) WHERE ((picture_hashed_at IS NULL) AND (NOT is_deleted));

CREATE INDEX ix_assets_places_unchecked ON public.assets USING btree (storage_config_id, id) WHERE ((latitude IS NOT NULL) AND (places_checked_at IS NULL) AND (NOT is_deleted));

CREATE INDEX ix_assets_scrub_order ON public.assets USING btree (storage_config_id, content_checked_at NULLS FIRST, id) WHERE (NOT is_deleted);

CREATE INDEX ix_assets_similar_group ON public.assets USING btree (similar_group_id) WHERE (similar_group_id IS NOT NULL);

CREATE INDEX ix_assets_stack_primary ON public.assets USING btree (stack_primary_id) WHERE (stack_primary_id IS NOT NULL);

CREATE INDEX ix_auth_tokens_expiry ON public.auth_tokens USING btree (expires_at);

CREATE INDEX ix_auth_tokens_user ON public.auth_tokens USING btree (user_name);

CREATE INDEX ix_faces_asset ON public.faces USING btree (asset_id);

CREATE INDEX ix_faces_config ON public.faces USING btree (storage_config_id);

CREATE INDEX ix_faces_person ON public.faces USING btree (person_id) WHERE (person_id IS NOT NULL);

CREATE INDEX ix_people_config ON public.people USING btree (storage_config_id);

CREATE INDEX ix_proxy_files_legacy_name ON public.proxy_files USING btree (asset_id, proxy_type) WHERE (path ~ '/[^/.]+\.[^/.]+$'::text);

CREATE INDEX ix_proxy_files_path ON public.proxy_files USING btree (path) WHERE (path IS NOT NULL);

CREATE INDEX ix_similar_groups_config ON public.similar_groups USING btree (storage_config_id);

CREATE INDEX ix_storage_configs_idle ON public.storage_configs USING btree (id) WHERE (active AND (running_item_id IS NULL));

CREATE INDEX ix_web_sessions_user ON public.web_sessions USING btree (user_id);

CREATE INDEX ix_work_attempts_config ON public.work_attempts USING btree (storage_config_id, claimed_at);

CREATE UNIQUE INDEX ix_work_items_dedup_key_queued ON public.work_items USING btree (dedup_key) WHERE ((status = 'queued'::public.work_status) AND (dedup_key IS NOT NULL));

CREATE INDEX ix_work_items_finished ON public.work_items USING btree (finished_at) WHERE (finished_at IS NOT NULL);

CREATE INDEX ix_work_items_queue_order ON public.work_items USING btree (requested_at, id) WHERE ((status = 'queued'::public.work_status) AND (attempt >= 0));

CREATE INDEX ix_work_items_queued_by_config ON public.work_items USING btree (storage_config_id, requested_at, id) WHERE (status = 'queued'::public.work_status);

CREATE INDEX ix_work_items_queued_not_before ON public.work_items USING btree (not_before) WHERE ((status = 'queued'::public.work_status) AND (not_before IS NOT NULL));

CREATE INDEX ix_work_items_queued_unscoped ON public.work_items USING btree (requested_at, id) WHERE ((status = 'queued'::public.work_status) AND (storage_config_id IS NULL));

CREATE INDEX ix_work_items_running_lease ON public.work_items USING btree (lease_expires_at) WHERE (status = 'running'::public.work_status);

CREATE UNIQUE INDEX ix_work_items_storage_config_running ON public.work_items USING btree (storage_config_id) WHERE ((status = 'running'::public.work_status) AND (storage_config_id IS NOT NULL));

CREATE INDEX ix_workers_last_seen_at ON public.workers USING btree (last_seen_at);

CREATE TRIGGER work_items_notify_insert AFTER INSERT ON public.work_items REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.notify_work_inserted();

CREATE TRIGGER work_items_notify_update AFTER UPDATE OF status ON public.work_items FOR EACH ROW WHEN (((new.status = 'queued'::public.work_status) OR ((old.status = 'running'::public.work_status) AND (new.status <> 'running'::public.work_status) AND (new.storage_config_id IS NOT NULL)))) EXECUTE FUNCTION public.notify_work_available();

CREATE TRIGGER work_items_track_running_delete AFTER DELETE ON public.work_items FOR EACH ROW WHEN (((old.status = 'running'::public.work_status) AND (old.storage_config_id IS NOT NULL))) EXECUTE FUNCTION public.track_config_running_item();

CREATE TRIGGER work_items_track_running_insert AFTER INSERT ON public.work_items FOR EACH ROW WHEN (((new.status = 'running'::public.work_status) AND (new.storage_config_id IS NOT NULL))) EXECUTE FUNCTION public.track_config_running_item();

CREATE TRIGGER work_items_track_running_update AFTER UPDATE OF status ON public.work_items FOR EACH ROW WHEN (((new.storage_config_id IS NOT NULL) AND ((old.status = 'running'::public.work_status) <> (new.status = 'running'::public.work_status)))) EXECUTE FUNCTION public.track_config_running_item();

ALTER TABLE ONLY public.asset_duplicates
    ADD CONSTRAINT asset_duplicates_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES public.assets(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.asset_duplicates
    ADD CONSTRAINT asset_duplicates_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.asset_errors
    ADD CONSTRAINT asset_errors_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.assets
    ADD CONSTRAINT assets_burst_id_fkey FOREIGN KEY (burst_id) REFERENCES public.bursts(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.assets
    ADD CONSTRAINT assets_paired_asset_id_fkey FOREIGN KEY (paired_asset_id) REFERENCES public.assets(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.assets
    ADD CONSTRAINT assets_similar_group_id_fkey FOREIGN KEY (similar_group_id) REFERENCES public.similar_groups(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.assets
    ADD CONSTRAINT assets_stack_primary_id_fkey FOREIGN KEY (stack_primary_id) REFERENCES public.assets(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.assets
    ADD CONSTRAINT assets_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT auth_tokens_user_name_fkey FOREIGN KEY (user_name) REFERENCES public.users(name) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.bursts
    ADD CONSTRAINT bursts_primary_asset_fk FOREIGN KEY (primary_asset_id) REFERENCES public.assets(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.bursts
    ADD CONSTRAINT bursts_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.faces
    ADD CONSTRAINT faces_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES public.assets(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.faces
    ADD CONSTRAINT faces_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.faces
    ADD CONSTRAINT faces_storage_config_id_person_id_fkey FOREIGN KEY (storage_config_id, person_id) REFERENCES public.people(storage_config_id, id) ON DELETE SET NULL (person_id);

ALTER TABLE ONLY public.people
    ADD CONSTRAINT people_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.proxy_files
    ADD CONSTRAINT proxy_files_asset_id_fkey FOREIGN KEY (asset_id) REFERENCES public.assets(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.similar_groups
    ADD CONSTRAINT similar_groups_primary_asset_id_fkey FOREIGN KEY (primary_asset_id) REFERENCES public.assets(id) ON DELETE SET NULL;

ALTER TABLE ONLY public.similar_groups
    ADD CONSTRAINT similar_groups_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.web_sessions
    ADD CONSTRAINT web_sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.work_attempts
    ADD CONSTRAINT work_attempts_work_item_id_fkey FOREIGN KEY (work_item_id) REFERENCES public.work_items(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.work_items
    ADD CONSTRAINT work_items_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.work_schedules
    ADD CONSTRAINT work_schedules_storage_config_id_fkey FOREIGN KEY (storage_config_id) REFERENCES public.storage_configs(id) ON DELETE CASCADE;
