-- A RAW and the photo of the same capture (RAW+JPEG) are one picture: the RAW names its
-- primary, as a Live Photo's image names its video (ADR 0027). Set by burst detection
-- (library/stacks.py); cleared when either goes. The index serves the foreign key's
-- ON DELETE SET NULL when a primary is purged.
ALTER TABLE assets ADD COLUMN stack_primary_id bigint REFERENCES assets (id) ON DELETE SET NULL;
CREATE INDEX ix_assets_stack_primary ON assets (stack_primary_id) WHERE stack_primary_id IS NOT NULL;
