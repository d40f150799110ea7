-- "On this day" (safelight serve, safelight.web.onthisday): the live assets of one month
-- and day, of the years before the one asked for, newest first. The index of 0002 held
-- (month, day) alone, which finds the day's rows but sorts them; this one also holds
-- the order the page shows them in, so the day is read in order from the index, and the
-- year's bound is checked in it before any row is visited.
DROP INDEX ix_assets_on_this_day;
CREATE INDEX ix_assets_on_this_day
    ON assets (captured_month, captured_day, captured_year DESC, captured_local DESC, id DESC)
    WHERE NOT is_deleted;

-- A Live Photo's video is shown through its image, which names it: the day's query asks,
-- for each of its videos, whether a live image names it. The same index serves the
-- foreign key's ON DELETE SET NULL when a purge deletes a video.
CREATE INDEX ix_assets_paired ON assets (paired_asset_id) WHERE paired_asset_id IS NOT NULL;
