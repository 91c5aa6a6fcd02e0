"""Run a real PostgreSQL in the foreground on a given port and data dir: a stand-in "server command".

    python tests/sqlness_fixtures/pg_server.py --port P --data-dir DIR

Creates the cluster with initdb when DIR is new (and reuses it on a restart, so data persists),
then runs postgres until SIGTERM/SIGINT, which it turns into PostgreSQL's fast shutdown. As root,
PostgreSQL runs as the ``postgres`` user (it refuses to run as root), like tests/pgoracle.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.pgoracle import postgres_bin_dir  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    bindir = postgres_bin_dir()
    if bindir is None:
        print("PostgreSQL server binaries not found", file=sys.stderr)
        return 1
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    data_dir: Path = args.data_dir
    if not (data_dir / "PG_VERSION").exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        if as_root:
            shutil.chown(data_dir, "postgres", "postgres")
            # The runner's private temp dir is 0700; the postgres user must be able to enter it.
            parent = data_dir.parent
            parent.chmod(parent.stat().st_mode | 0o011)
        subprocess.run(prefix + [f"{bindir}/initdb", "-D", str(data_dir), "-U", "postgres", "-A", "trust",
                                 "-E", "UTF8", "--locale=C.UTF-8"], check=True, stdout=subprocess.DEVNULL)
    proc = subprocess.Popen(prefix + [f"{bindir}/postgres", "-D", str(data_dir), "-p", str(args.port),
                                      "-h", "127.0.0.1", "-k", str(data_dir), "-c", "fsync=off",
                                      "-c", "timezone=UTC"])

    def fast_shutdown(signum: int, frame: object) -> None:
        # Signal the postmaster itself (runuser in between would not pass SIGINT on).
        try:
            pid = int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError):
            proc.terminate()

    signal.signal(signal.SIGTERM, fast_shutdown)
    signal.signal(signal.SIGINT, fast_shutdown)
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
