-- "On this day" (safelight serve, safelight.web.onthisday): the live assets of a month
-- and day (or two: 28 and 29 February) of the years before the one asked for, served a
-- page at a time in the page's order (newest year first, then newest first, the id as
-- the tiebreak). The index of 0002 held (month, day) alone. This one continues in that
-- order, so a page is a walk of the index (read backwards) from its keyset cursor,
-- LIMIT rows and no sort of the whole day; the year's bound is an index condition too,
-- so a day of this year's photos (or of later ones, for a day picked in the past) is
-- never visited. The February pair is two such walks, one per day, merged.
DROP INDEX ix_assets_on_this_day;
CREATE INDEX ix_assets_on_this_day
    ON assets (captured_month, captured_day, captured_year, captured_local, id)
    WHERE NOT is_deleted;

-- A Live Photo's video is shown through its image, which names it: the day's query
-- keeps a video only if no live image names it (an anti join on this index, not a scan
-- of every asset). The same index serves the foreign key's ON DELETE SET NULL when a
-- purge deletes a video.
CREATE INDEX ix_assets_paired ON assets (paired_asset_id) WHERE paired_asset_id IS NOT NULL;
