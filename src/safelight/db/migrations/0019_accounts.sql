-- Accounts of the dashboard (issue #28, ADR 0040). A user's name is a storage config
-- owner's name: a user sees the configs whose owner is their name (an admin sees all).
-- Nothing here references storage_configs: a user may exist before their first folder,
-- and a config may belong to an owner who never signs in.
--
-- users: one row a person. password_hash is an argon2id hash (PHC string); NULL for
-- an account that has none yet (the first admin, made by serve's one-time link), which
-- no password signs in to.
CREATE TABLE users (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE CHECK (name <> ''),
    is_admin boolean NOT NULL DEFAULT false,
    password_hash text,
    created_at timestamptz NOT NULL,
    password_changed_at timestamptz
);

-- auth_tokens (migration 0002, cleaned by the maintenance kind when expired) become the
-- personal API tokens of scripts (Authorization: Bearer): each is 256 random bits,
-- shown once; only its SHA-256 (hex) is kept, since a KDF adds nothing to a secret of
-- that entropy and a lookup by digest stays one index probe. Until now nothing wrote
-- the table, so a row there names no account: such rows are removed, and every token
-- from now on belongs to a user (renamed or removed with it).
DELETE FROM auth_tokens WHERE user_name NOT IN (SELECT name FROM users);
ALTER TABLE auth_tokens
    ADD CONSTRAINT auth_tokens_user_name_fkey FOREIGN KEY (user_name)
        REFERENCES users (name) ON DELETE CASCADE ON UPDATE CASCADE,
    ADD COLUMN last_used_at timestamptz;
CREATE INDEX ix_auth_tokens_user ON auth_tokens (user_name);

-- web_sessions: a signed-in browser. The cookie carries the session id; only its
-- SHA-256 is kept, with the origin (scheme, host and port) it was signed in at (a
-- cookie presented at any other origin is refused) and the SHA-256 of its CSRF token.
-- Ended by sign-out, by expiry, and with the user (a removed user, a changed password).
CREATE TABLE web_sessions (
    id_digest bytea PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    origin text NOT NULL,
    csrf_digest bytea NOT NULL,
    created_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX ix_web_sessions_user ON web_sessions (user_id);
