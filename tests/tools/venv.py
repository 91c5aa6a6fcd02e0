"""The tool suite's own environment: released versions of dbt, pgcli and ibis, pinned in
``tests/tools/requirements.txt`` and installed into ``.venv-tools`` beside the project's ``.venv``.

The tools pin libraries the gateway pins differently (ibis 12 needs a sqlglot older than the one
tidegate translates with), so they cannot share one environment. ``./tidegate.sh test`` builds it
before pytest starts (``python -m tests.tools.venv``); the suite's fixture builds it too when pytest
runs alone. It is rebuilt whenever the requirements change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
VENV = HERE.parent.parent / ".venv-tools"
_STAMP = VENV / ".tools-requirements.sha256"


def _digest() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def bin_path(name: str) -> Path:
    return VENV / "bin" / name


def ensure() -> Path:
    """Create or refresh ``.venv-tools``; return its python. Raises if pip cannot install the pins."""
    python = bin_path("python")
    if python.exists() and _STAMP.exists() and _STAMP.read_text().strip() == _digest():
        return python
    if VENV.exists():
        shutil.rmtree(VENV)
    base = getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable
    subprocess.run([base, "-m", "venv", str(VENV)], check=True)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-r", str(REQUIREMENTS)],
                   check=True, env=env)
    subprocess.run([str(python), "-m", "pip", "check"], check=True, env=env, stdout=subprocess.DEVNULL)
    _STAMP.write_text(_digest())
    return python


if __name__ == "__main__":
    print(ensure())


def run_probe(script: Path, *args: str) -> dict:
    """Run one of the suite's probe scripts with the tools' Python; its stdout is one JSON object."""
    import json

    proc = subprocess.run([str(bin_path("python")), str(script), *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)
