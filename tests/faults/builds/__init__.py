"""Broken builds of the Worker, for showing that the fault run fails when the guarantee
is broken (``bench/faults.py --build``, docs/reliability.md). Each folder holds a ``sitecustomize``
that the scenario puts first on its Worker processes' ``PYTHONPATH`` only: Python
imports it at start-up, before ``safelight`` runs, and it patches the installed build.
Nothing under src/ knows of them."""
