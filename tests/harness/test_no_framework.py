"""The core imports no web framework: checked on the source, so it cannot rot silently."""

from __future__ import annotations

import ast
from pathlib import Path

FORBIDDEN = (
    "django",
    "channels",
    "ninja",
    "daphne",
    "sessions_app",
    "memory_app",
    "skills_app",
    "teams_app",
    "horsie_site",
)


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_harness_imports_no_framework():
    files = list((Path(__file__).parents[2] / "harness").rglob("*.py"))
    assert files
    offenders = {str(f): imported_roots(f) & set(FORBIDDEN) for f in files}
    assert {f: r for f, r in offenders.items() if r} == {}
