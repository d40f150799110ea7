-- Where a config's assets were taken (the assets' place_*, time_zone, zone_source and
-- places_checked_at columns, migration 0023), as named blocks: "-- name --" then a line
-- that says what it does. Loaded once by safelight.library.catalogue.places, the only
-- module that reads them. The crawl writes these columns with each asset it reads
-- (assets.sql); these are the place fill's, for rows catalogued before migration 0023.
-- Time comes in as now from the injected clock; the writes run inside the attempt's
-- fenced transaction. Names read subject first (ADR 0020).
-- tests/unit/test_query_names.py checks that each is used and each name used exists.

-- assets_places_unchecked --
-- A batch of a config's live assets with a position whose place was never looked up,
-- after an id, in id order: a walk of ix_assets_places_unchecked from its keyset.
SELECT id, latitude, longitude, captured_at, captured_local, captured_at_source,
       zone_source
FROM assets
WHERE storage_config_id = %(config_id)s AND latitude IS NOT NULL
  AND places_checked_at IS NULL AND NOT is_deleted AND id > %(after)s
ORDER BY id
LIMIT %(limit)s

-- assets_places_unchecked_exist --
-- Whether a config has a live asset with a position whose place was never looked up
-- (one probe of ix_assets_places_unchecked): the crawl then queues the place fill.
SELECT EXISTS (
    SELECT 1 FROM assets
    WHERE storage_config_id = %(config_id)s AND latitude IS NOT NULL
      AND places_checked_at IS NULL AND NOT is_deleted
)

-- assets_set_places --
-- Write the place, zone and capture times found for these assets, each still live,
-- still unchecked and still at the position it was looked up for: a row a crawl read
-- again meanwhile (it writes its own) or whose position changed is left as it is.
-- The ids written.
UPDATE assets a
SET place_city = u.place_city, place_region = u.place_region,
    place_country = u.place_country, place_country_code = u.place_country_code,
    time_zone = u.time_zone, zone_source = u.zone_source,
    captured_at = u.captured_at, captured_local = u.captured_local,
    captured_year = extract(year FROM u.captured_local)::int,
    captured_month = extract(month FROM u.captured_local)::int,
    captured_day = extract(day FROM u.captured_local)::int,
    places_checked_at = %(now)s
FROM unnest(
    %(ids)s::bigint[], %(latitudes)s::double precision[], %(longitudes)s::double precision[],
    %(cities)s::text[], %(regions)s::text[], %(countries)s::text[], %(country_codes)s::text[],
    %(time_zones)s::text[], %(zone_sources)s::text[], %(instants)s::timestamptz[],
    %(locals)s::timestamp[]
) AS u(id, latitude, longitude, place_city, place_region, place_country,
       place_country_code, time_zone, zone_source, captured_at, captured_local)
WHERE a.id = u.id AND a.storage_config_id = %(config_id)s AND NOT a.is_deleted
  AND a.places_checked_at IS NULL AND a.latitude = u.latitude AND a.longitude = u.longitude
RETURNING a.id
