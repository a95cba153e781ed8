#!/usr/bin/env python3
"""runner.py: call external commands safely (timeout, retries, apply once, signals)."""

import sys

if __name__ == "__main__":
    try:
        from entrypoints.cli import launch
    except KeyboardInterrupt:
        sys.exit(130)
    launch()
