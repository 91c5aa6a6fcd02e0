"""Command line: ``python -m sqlness`` / ``tidegate-sqlness``."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from sqlness.runner import DEFAULT_CASE_DIR, Runner, RunnerConfig
from sqlness.server import DEFAULT_SERVER_CMD, DEFAULT_SERVER_DSN, DEFAULT_START_TIMEOUT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidegate-sqlness",
        description="Run sqlness golden-file SQL cases (<case-dir>/<env>/**/*.sql against <case>.result).")
    parser.add_argument("-c", "--case-dir", type=Path, default=DEFAULT_CASE_DIR,
                        help="directory holding one sub-directory per env (default: sqlness/cases)")
    parser.add_argument("--env", action="append", dest="envs", metavar="NAME",
                        help="run only this env (repeatable; default: every env directory)")
    parser.add_argument("--filter", metavar="REGEX",
                        help="run only cases whose path relative to the env dir matches (re.search)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="case files run in parallel, each in its own session (default 1)")
    parser.add_argument("--fail-fast", action="store_true", help="stop after the first failing case")
    parser.add_argument("--update", action="store_true",
                        help="rewrite .result files with the actual output instead of failing")
    parser.add_argument("--dsn", help="use this running server for every env instead of starting one")
    parser.add_argument("--server-cmd", metavar="CMDLINE",
                        help="command that starts a server; {port} and {data_dir} are substituted "
                             f"(default: {shlex.join(DEFAULT_SERVER_CMD)})")
    parser.add_argument("--server-dsn", default=DEFAULT_SERVER_DSN, metavar="DSN",
                        help=f"how to connect to a started server; {{port}} is substituted "
                             f"(default: {DEFAULT_SERVER_DSN!r})")
    parser.add_argument("--start-timeout", type=float, default=DEFAULT_START_TIMEOUT, metavar="SECONDS",
                        help="how long a server may take to answer SELECT 1 (default 120)")
    parser.add_argument("--statement-timeout", type=float, default=None, metavar="SECONDS",
                        help="cancel a statement running longer than this (default: no limit)")
    parser.add_argument("--keep-data", action="store_true",
                        help="keep each env's data dir and server.log after the run")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("-j/--jobs must be at least 1")
    if args.filter:
        try:
            re.compile(args.filter)
        except re.error as exc:
            parser.error(f"--filter: invalid regular expression: {exc}")
    server_cmd = shlex.split(args.server_cmd) if args.server_cmd else list(DEFAULT_SERVER_CMD)
    if not server_cmd:
        parser.error("--server-cmd is empty")
    config = RunnerConfig(case_dir=args.case_dir, envs=args.envs, filter=args.filter, jobs=args.jobs,
                          fail_fast=args.fail_fast, update=args.update, dsn=args.dsn,
                          server_cmd=server_cmd, server_dsn=args.server_dsn,
                          start_timeout=args.start_timeout, statement_timeout=args.statement_timeout,
                          keep_data=args.keep_data)
    summary = Runner(config).run()
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
