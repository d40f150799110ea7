"""What an operator reads of the queue and the library, for both front ends: the
read-only queries (``queries.py``, ``queries.sql``) and the documents made of them
(``documents.py``). The CLI (``cli/``) and the dashboard (``web/``) import it; it
imports ``work/`` and ``core/``, never ``cli/`` or ``web/``."""
