"""What makes a Worker process watchable: its Prometheus metrics (the observer of the
engine and the crawls), ``/metrics`` and ``/healthz``, and the presence of its Workers
that ``safelight health`` reads. Imports ``work/``, ``db/``, ``core/`` and the logs'
masker; never ``library/``, ``handlers/``, ``cli/``, ``app``."""
