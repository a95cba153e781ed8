"""The installed `runner` command: runner.py's code, kept out of site-packages' top level.

The wheel puts `domain`, `adapters` and `entrypoints` under `pyops_runner/app/`, a
folder only the runner's own process puts on its path; so other packages of the
same names (`entrypoints`, `adapters` on the package index) stay what they are
for everyone else.
"""

import os
import sys


def main() -> None:
    """The console script: as `python3 runner.py`, with the home in the user's state folder."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "app"))
    from entrypoints.cli import launch

    launch(None)
