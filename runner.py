#!/usr/bin/env python3
"""runner.py: call external commands safely (timeout, retries, apply once, signals).

This file stays readable by any Python, so that an old one can say what it lacks.
It is also the zipapp's __main__.py.
"""

import os
import sys

FOLDERS = ("domain", "adapters", "entrypoints")


def fail(message):
    # type: (str) -> None
    sys.stderr.write("runner: error: " + message + "\n")
    sys.exit(125)


if __name__ == "__main__":
    if sys.version_info < (3, 10):
        fail("runner.py needs Python 3.10 or later (this is %s)" % sys.version.split()[0])
    here = os.path.dirname(os.path.realpath(__file__))
    zipped = not os.path.isdir(here)
    if not zipped:
        missing = [name + "/" for name in FOLDERS if not os.path.isdir(os.path.join(here, name))]
        if missing:
            fail(
                "runner.py needs its folders %s beside it in %s: copy the whole folder, "
                "install it from the repository (pipx install .), or use the single file "
                "runner.pyz that 'make dist' builds" % (", ".join(missing), here)
            )
        if sys.path[0] != here:
            sys.path.insert(0, here)
    try:
        from entrypoints.cli import launch
    except KeyboardInterrupt:
        sys.exit(130)
    launch(None if zipped else here)
