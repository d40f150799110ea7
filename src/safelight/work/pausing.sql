-- Pause and resume (ADR 0060), read by safelight.work.pausing: the rows the claim
-- (items_claim, queries.sql) reads to pass paused work over. Times come from the
-- clock's now(): a pause is an operator's act, shown as when it was made.

-- paused_kind_add --
-- Pause a kind across all Workers: none claims its items until it is resumed (ADR 0060); a row back if it was not paused already.
-- The first pause keeps its time and its author: pausing again changes nothing.
INSERT INTO paused_kinds (kind, paused_at, paused_by)
VALUES (%(kind)s, %(now)s, %(by)s)
ON CONFLICT (kind) DO NOTHING
RETURNING kind

-- paused_kind_remove --
-- Resume a paused kind; a row back if it was paused.
DELETE FROM paused_kinds WHERE kind = %(kind)s RETURNING kind

-- config_pause --
-- Pause a storage config's work: none of its items is claimed until it is resumed; its id back if it exists (its first pause kept).
UPDATE storage_configs
SET paused_at = coalesce(paused_at, %(now)s), paused_by = CASE WHEN paused_at IS NULL THEN %(by)s ELSE paused_by END
WHERE id = %(config_id)s
RETURNING id, paused_at, paused_by

-- config_resume --
-- Resume a storage config's work; its id back if it exists.
UPDATE storage_configs SET paused_at = NULL, paused_by = NULL
WHERE id = %(config_id)s
RETURNING id

-- paused_remove_all --
-- Resume every paused kind and config; how many of each.
WITH kinds AS (
    DELETE FROM paused_kinds RETURNING kind
), configs AS (
    UPDATE storage_configs SET paused_at = NULL, paused_by = NULL
    WHERE paused_at IS NOT NULL
    RETURNING id
)
SELECT (SELECT count(*) FROM kinds) AS kinds, (SELECT count(*) FROM configs) AS configs

-- paused_list --
-- What is paused: each paused kind (config_id NULL) and each paused config of an owner (NULL: all; kind NULL), with who paused it and when, and its queued items.
SELECT p.kind, NULL::uuid AS config_id, NULL::text AS owner, NULL::text AS root_path, p.paused_at, p.paused_by,
       (SELECT count(*) FROM work_items w WHERE w.kind = p.kind AND w.status = 'queued') AS queued
FROM paused_kinds p
UNION ALL
SELECT NULL, c.id, c.owner, c.root_path, c.paused_at, c.paused_by,
       (SELECT count(*) FROM work_items w WHERE w.storage_config_id = c.id AND w.status = 'queued')
FROM storage_configs c
WHERE c.paused_at IS NOT NULL AND (%(owner)s::text IS NULL OR c.owner = %(owner)s::text)
ORDER BY paused_at, kind, config_id

