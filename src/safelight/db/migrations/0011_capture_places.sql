-- Where a capture time came from, now that a photo is dated from every place a camera
-- or an editor writes a date (ADR 0026): 'exif', embedded 'xmp', 'iptc', the maker's own
-- block ('maker': a maker note, Canon's CIFF, Olympus's APP12), a 'video' container,
-- and the 'file' time only when none of them holds a date.
ALTER TABLE assets DROP CONSTRAINT assets_captured_at_source_check;
ALTER TABLE assets ADD CONSTRAINT assets_captured_at_source_check
    CHECK (captured_at_source IN ('exif', 'xmp', 'iptc', 'maker', 'video', 'file'));
