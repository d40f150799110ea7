"""The library's database: one module and one ``.sql`` file of named queries per table
group (``assets``, ``proxies``, ``groups``, ``configs``, ``database``, ``signins``,
``people``), on the connection or transaction the caller holds; ``owners`` says what an
owner name may be. Each query file is read only by the module that loads it; everyone
else calls its functions, and no other part of the library holds SQL.

May import ``library.files`` and ``library.media`` (the values its rows hold); nothing
else of the library.
"""
