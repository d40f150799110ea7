-- Where a capture time came from, now that a photo is dated from every place a camera
-- or an editor writes a date (ADR 0026): 'exif', embedded 'xmp', 'iptc', the maker's own
-- block ('maker': a maker note, Canon's CIFF, Olympus's APP12), a 'video' container,
-- and the 'file' time only when none of them holds a date.
ALTER TABLE assets DROP CONSTRAINT assets_captured_at_source_check;
ALTER TABLE assets ADD CONSTRAINT assets_captured_at_source_check
    CHECK (captured_at_source IN ('exif', 'xmp', 'iptc', 'maker', 'video', 'file'));

-- Where it was taken (issue #16, item 5): EXIF's GPS IFD, else XMP, for photos; the
-- QuickTime ISO 6709 location for videos. NULL when the file says nothing (or 0, 0:
-- what a receiver without a fix writes). Degrees (WGS 84), metres above sea level.
ALTER TABLE assets
    ADD COLUMN latitude double precision CHECK (latitude BETWEEN -90 AND 90),
    ADD COLUMN longitude double precision CHECK (longitude BETWEEN -180 AND 180),
    ADD COLUMN altitude_m double precision,
    ADD CONSTRAINT assets_location_whole CHECK ((latitude IS NULL) = (longitude IS NULL));
