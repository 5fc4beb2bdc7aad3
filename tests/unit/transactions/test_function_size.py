"""The transaction coordinator's functions stay small enough to read whole (the project's ~40-line rule)."""
from __future__ import annotations

import ast
from pathlib import Path

import transactions.coordinator

MAX_LINES = 40
PACKAGE = Path(transactions.coordinator.__file__).parent


def test_every_function_of_the_transaction_coordinator_fits_in_40_lines():
    too_long = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    too_long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert too_long == []
