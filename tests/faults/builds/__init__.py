"""Broken builds of the Worker, for showing that the fault run fails when the guarantee
is broken (tests/faults/test_broken_builds.py, ``bench/faults.py --build``,
docs/reliability.md). Each folder holds a ``sitecustomize`` that the scenario puts first
on its Worker processes' ``PYTHONPATH`` only: Python imports it at start-up, before
``safelight`` runs, and it patches the installed build. ``intact`` patches nothing: the
control. Each also installs the fault points of ``faultpoints``, which do nothing
unless a test asks for one. Nothing under src/ knows of them."""
