"""The domain stays pure: no OS modules, nothing from the outer layers."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORBIDDEN = {"os", "subprocess", "time", "signal", "fcntl", "adapters", "entrypoints", "select"}
DOMAIN_FILES = sorted((ROOT / "domain").glob("*.py"))


def imported_roots(path: pathlib.Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_domain_has_modules() -> None:
    """The check below cannot pass by finding nothing."""
    assert len(DOMAIN_FILES) >= 5


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.name)
def test_domain_imports_nothing_impure(path: pathlib.Path) -> None:
    """domain/*.py imports no OS module and nothing of adapters or entrypoints."""
    assert imported_roots(path) & FORBIDDEN == set()


def test_the_check_catches_a_forbidden_import(tmp_path: pathlib.Path) -> None:
    """A module that imports os and adapters is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os.path\nfrom adapters.lock import FcntlLock\n")
    assert imported_roots(bad) & FORBIDDEN == {"os", "adapters"}
