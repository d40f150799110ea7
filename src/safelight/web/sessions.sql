-- The dashboard's signed-in browsers (web_sessions, migration 0019; ADR 0041). Named
-- blocks ("-- name --" then a line that says what it does), loaded by
-- safelight.web.sessions; names read subject first (ADR 0020). Every value is a
-- parameter; every time is the dashboard's clock's, passed in.

-- session_insert --
-- A session opened at sign-in: the digests of its id and its CSRF token, the origin it is bound to.
INSERT INTO web_sessions (id_digest, user_id, origin, csrf_digest, created_at, last_seen_at,
                          expires_at)
VALUES (%(id_digest)s, %(user_id)s, %(origin)s, %(csrf_digest)s, %(now)s, %(now)s,
        %(expires_at)s)

-- session_of_cookie --
-- The live session a cookie names at one origin, with its user: none at another origin, none expired or idle too long.
-- The origin is part of the key: a cookie a browser sends to another port or host of
-- the same machine names no session there (ADR 0041).
SELECT s.csrf_digest, s.last_seen_at, u.id AS user_id, u.name, u.is_admin,
       u.password_hash IS NOT NULL AS has_password
FROM web_sessions s
JOIN users u ON u.id = s.user_id
WHERE s.id_digest = %(id_digest)s
  AND s.origin = %(origin)s
  AND s.expires_at > %(now)s
  AND s.last_seen_at > %(idle_since)s

-- session_touch --
-- A session seen again: its idle time starts anew (at most once a minute, the caller decides).
UPDATE web_sessions SET last_seen_at = %(now)s WHERE id_digest = %(id_digest)s

-- session_delete --
-- A session ended by sign-out.
DELETE FROM web_sessions WHERE id_digest = %(id_digest)s

-- sessions_delete_ended --
-- Sessions past their lifetime or idle too long, removed at each sign-in (no reader finds them anyway).
DELETE FROM web_sessions WHERE expires_at <= %(now)s OR last_seen_at <= %(idle_since)s
