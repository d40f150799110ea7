-- The queries of accounts (users, their personal API tokens, the ending of their web
-- sessions), as named blocks: "-- name --" then a line that says what it does. Loaded
-- once by safelight.accounts.store. Time comes in as now from the injected clock.
-- Names read subject first (ADR 0020): the table or thing the query reads or changes,
-- singular for one row and plural for a set, then what it does or returns, then any
-- qualifier. A password's hash is read by user_for_sign_in alone.
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- users_lock_for_add --
-- Make adds take turns until this transaction ends, so that the first admin is made
-- only while no user exists, even against an add whose row is not yet committed.
SELECT pg_advisory_xact_lock(%(key)s)

-- user_insert --
-- A new user; nothing when the name is taken.
INSERT INTO users (name, is_admin, password_hash, created_at, password_changed_at)
VALUES (%(name)s, %(is_admin)s, %(password_hash)s, %(now)s, %(password_changed_at)s)
ON CONFLICT (name) DO NOTHING
RETURNING id, name, is_admin, password_hash IS NOT NULL AS has_password, created_at

-- user_insert_first_admin --
-- An admin with no password, only while there is no user at all (under users_lock_for_add).
INSERT INTO users (name, is_admin, password_hash, created_at)
SELECT %(name)s, true, NULL, %(now)s
WHERE NOT EXISTS (SELECT 1 FROM users)
RETURNING id, name, is_admin, password_hash IS NOT NULL AS has_password, created_at

-- user_get --
-- One user by name.
SELECT id, name, is_admin, password_hash IS NOT NULL AS has_password, created_at
FROM users
WHERE name = %(name)s

-- user_for_sign_in --
-- One user by name with their password's hash, to verify a sign-in against.
SELECT id, name, is_admin, password_hash, created_at
FROM users
WHERE name = %(name)s

-- users_list --
-- Every user, oldest first.
SELECT id, name, is_admin, password_hash IS NOT NULL AS has_password, created_at
FROM users
ORDER BY created_at, id

-- users_count --
-- How many users there are.
SELECT count(*) FROM users

-- user_set_password --
-- A user's new password hash; the user's id, or nothing when there is no such user.
UPDATE users
SET password_hash = %(password_hash)s, password_changed_at = %(now)s
WHERE name = %(name)s
RETURNING id

-- user_rehash_password --
-- Replace a hash made with older parameters, only if it is still the one verified (a
-- password changed meanwhile is not overwritten).
UPDATE users
SET password_hash = %(password_hash)s
WHERE id = %(id)s AND password_hash = %(old_hash)s

-- sessions_delete_of_user --
-- End every web session of a user (a changed password signs every browser out).
DELETE FROM web_sessions WHERE user_id = %(user_id)s

-- user_delete --
-- Remove a user; their tokens and web sessions go with them (foreign keys, cascade).
DELETE FROM users WHERE name = %(name)s RETURNING id

-- token_insert --
-- A personal API token of a user, stored as its digest; nothing when there is no such user.
INSERT INTO auth_tokens (user_name, token_hash, created_at, expires_at)
SELECT name, %(token_hash)s, %(now)s, %(expires_at)s
FROM users
WHERE name = %(name)s
RETURNING id

-- tokens_delete_of_user --
-- Revoke every personal API token of a user.
DELETE FROM auth_tokens WHERE user_name = %(name)s

-- token_use --
-- The user of an unexpired token, found by its digest, noting that it was used now.
UPDATE auth_tokens t
SET last_used_at = %(now)s
FROM users u
WHERE t.token_hash = %(token_hash)s AND t.expires_at > %(now)s AND u.name = t.user_name
RETURNING u.id, u.name, u.is_admin, u.password_hash IS NOT NULL AS has_password, u.created_at

-- tokens_summary --
-- Per user, their unexpired tokens: how many, and when one was last used.
SELECT user_name, count(*) AS tokens, max(last_used_at) AS last_used_at
FROM auth_tokens
WHERE expires_at > %(now)s
GROUP BY user_name
