-- "On this day" (safelight serve, safelight.web.onthisday): the live assets of a month
-- and day (or two: 28 and 29 February) of the years before the one asked for. The
-- index of 0002 held (month, day) alone; with the year beside them, the year's bound is
-- an index condition too, and a day of this year's photos (or of later ones, for a day
-- picked in the past) is never visited. The page's order (year, then time) is a sort of
-- the day's few thousand rows at most: an index in that order would serve one day but
-- not the February pair, and is wider for every insert.
DROP INDEX ix_assets_on_this_day;
CREATE INDEX ix_assets_on_this_day
    ON assets (captured_month, captured_day, captured_year)
    WHERE NOT is_deleted;

-- A Live Photo's video is shown through its image, which names it: the day's query
-- keeps a video only if no live image names it (an anti join on this index, not a scan
-- of every asset). The same index serves the foreign key's ON DELETE SET NULL when a
-- purge deletes a video.
CREATE INDEX ix_assets_paired ON assets (paired_asset_id) WHERE paired_asset_id IS NOT NULL;
