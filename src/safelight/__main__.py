"""``python -m safelight``: the same as the ``safelight`` console script."""

from safelight.cli.main import main

if __name__ == "__main__":
    main()
