"""Parsing of ``.sql`` case files into statements with their comments and interceptors.

A statement starts at the first line that is neither blank nor a ``--`` comment and ends at the
first line whose stripped text ends with ``;`` (or at the end of the file). Comment lines above
a statement belong to it and are echoed into the output; ``-- SQLNESS <NAME> <args>`` comment
lines are interceptors that modify only that statement. Everything is validated here, before any
server starts, so a typo in a case file is reported with its file and line at once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlness.template import Template, TemplateError

INTERCEPTOR_PREFIX = "-- SQLNESS "


class CaseError(Exception):
    """A problem in a case file (or while applying one of its interceptors), naming file and line."""

    def __init__(self, path: Path | str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = str(path)
        self.line = line
        self.message = message


# ---------------------------------------------------------------------------------------------
# Interceptors
# ---------------------------------------------------------------------------------------------


@dataclass
class Replace:
    """``REPLACE <regex> [replacement]``: ``re.sub`` over the result text."""

    pattern: re.Pattern[str]
    replacement: str

    def apply(self, result: str) -> str:
        return self.pattern.sub(self.replacement, result)


@dataclass
class SortResult:
    """``SORT_RESULT [ignore_head] [ignore_tail]``: sort lines of the printed result.

    With counts (the sqlness format): the whole printed result is a list of lines (a table's
    borders and header lines included); the first ``ignore_head`` and last ``ignore_tail`` lines
    stay in place and the lines between are sorted, so ``SORT_RESULT 3 1`` sorts the body rows of
    a table with one header line. Without counts: a table's body rows are sorted (its borders and
    header stay in place); a result that is not a table has all its lines sorted.
    """

    ignore_head: int | None = None
    ignore_tail: int | None = None

    def apply(self, result: str) -> str:
        lines = result.split("\n")
        if self.ignore_head is None and self.ignore_tail is None:
            if _is_table(lines):
                return "\n".join(lines[:3] + sorted(lines[3:-1]) + lines[-1:])
            return "\n".join(sorted(lines))
        head = min(self.ignore_head or 0, len(lines))
        tail = min(self.ignore_tail or 0, len(lines) - head)
        middle = lines[head:len(lines) - tail]
        return "\n".join(lines[:head] + sorted(middle) + lines[len(lines) - tail:])


def _is_table(lines: list[str]) -> bool:
    def border(line: str) -> bool:
        return len(line) >= 2 and line[0] == "+" and line[-1] == "+" and set(line) <= {"+", "-"}

    return len(lines) >= 4 and border(lines[0]) and border(lines[2]) and border(lines[-1])


@dataclass
class Sleep:
    """``SLEEP <duration>``: wait before running the statement."""

    seconds: float


@dataclass
class Restart:
    """``ARG restart=true``: restart the server (same data dir) before the statement."""


@dataclass
class Env:
    """``ENV <VAR...>``: substitute ``$VAR`` / ``${VAR}`` from the runner's environment."""

    names: list[str]

    def apply(self, sql: str, environ: dict[str, str], path: Path, line: int) -> str:
        for name in self.names:
            if name not in environ:
                raise CaseError(path, line, f"environment variable {name} is not set")
            value = environ[name]
            sql = re.sub(r"\$\{" + re.escape(name) + r"\}|\$" + re.escape(name) + r"(?![A-Za-z0-9_])",
                         lambda _m: value, sql)
        return sql


@dataclass
class TemplateInterceptor:
    """``TEMPLATE <json>``: render the statement as a template with the JSON object as context."""

    context: dict[str, Any]
    template: Template | None = None

    def apply(self, sql: str, path: Path, line: int) -> str:
        try:
            template = self.template
            if template is None or template.source != sql:
                template = Template(sql)
            return template.render(self.context)
        except TemplateError as exc:
            raise CaseError(path, line, f"TEMPLATE: {exc}") from None


Interceptor = Replace | SortResult | Sleep | Restart | Env | TemplateInterceptor


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str) -> float:
    """``500ms``, ``1s``, ``1.5s``, ``2m``, ``1h``, ``1m30s``; a bare number is milliseconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text) / 1000.0
    pos = 0
    total = 0.0
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r} (use e.g. 500ms, 1s, 2m)")
        total += float(m.group(1)) * scale[m.group(2)]
        pos = m.end()
    if not text:
        raise ValueError("missing duration")
    return total


def parse_interceptor(text: str, path: Path, line: int) -> Interceptor | None:
    """Parse the text after ``-- SQLNESS ``; ``None`` for interceptors that need no runtime action."""
    name, _, args = text.partition(" ")
    name = name.strip()
    if name == "REPLACE":
        # Like sqlness: the pattern is the first token, the replacement everything after one space.
        pattern, _, replacement = args.lstrip(" ").partition(" ")
        if not pattern:
            raise CaseError(path, line, "REPLACE needs a regular expression")
        try:
            compiled = re.compile(pattern)
            compiled.sub(replacement, "")
        except re.error as exc:
            raise CaseError(path, line, f"REPLACE: invalid regular expression or replacement: {exc}") from None
        return Replace(compiled, replacement)
    if name == "SORT_RESULT":
        parts = args.split()
        if len(parts) > 2 or not all(p.isdigit() for p in parts):
            raise CaseError(path, line, "SORT_RESULT takes at most two non-negative integers: "
                                        "[ignore_head] [ignore_tail]")
        if not parts:
            return SortResult()
        nums = [int(p) for p in parts] + [0]
        return SortResult(nums[0], nums[1])
    if name == "SLEEP":
        try:
            return Sleep(parse_duration(args))
        except ValueError as exc:
            raise CaseError(path, line, f"SLEEP: {exc}") from None
    if name == "ARG":
        restart = False
        if not args.split():
            raise CaseError(path, line, "ARG needs key=value arguments (supported: restart=true)")
        for item in args.split():
            key, eq, value = item.partition("=")
            if key != "restart" or not eq:
                raise CaseError(path, line, f"ARG: unsupported argument {item!r} (supported: restart=true)")
            if value.lower() not in ("true", "false"):
                raise CaseError(path, line, f"ARG: restart must be true or false, not {value!r}")
            restart = value.lower() == "true"
        return Restart() if restart else None
    if name == "ENV":
        names = args.split()
        if not names or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names):
            raise CaseError(path, line, "ENV needs one or more environment variable names")
        return Env(names)
    if name == "TEMPLATE":
        try:
            context = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise CaseError(path, line, f"TEMPLATE: invalid JSON context: {exc}") from None
        if not isinstance(context, dict):
            raise CaseError(path, line, "TEMPLATE: the context must be a JSON object")
        return TemplateInterceptor(context)
    if name == "PROTOCOL":
        proto = args.strip()
        if proto.upper() not in ("POSTGRES", "POSTGRESQL"):
            raise CaseError(path, line, f"PROTOCOL: unsupported protocol {proto!r} (only POSTGRES)")
        return None
    raise CaseError(path, line, f"unknown interceptor {name!r} "
                                "(known: REPLACE, SORT_RESULT, SLEEP, ARG, ENV, TEMPLATE, PROTOCOL)")


# ---------------------------------------------------------------------------------------------
# Case files
# ---------------------------------------------------------------------------------------------


@dataclass
class Statement:
    line: int  # 1-based line of the statement's first line
    comments: list[str]  # comment lines above it, as written (interceptors included)
    lines: list[str]  # the statement as written
    interceptors: list[Interceptor] = field(default_factory=list)

    @property
    def sql(self) -> str:
        return "\n".join(self.lines)

    @property
    def display(self) -> str:
        return "\n".join(self.comments + self.lines)


@dataclass
class Case:
    path: Path  # the .sql file
    name: str  # path relative to the env dir, posix, without ".sql"
    statements: list[Statement]
    trailing_comments: list[str]

    @property
    def result_path(self) -> Path:
        return self.path.with_suffix(".result")

    @property
    def needs_restart(self) -> bool:
        return any(isinstance(i, Restart) for s in self.statements for i in s.interceptors)


def parse_case(path: Path, name: str, text: str | None = None) -> Case:
    """Split a case file into statements; raises :class:`CaseError` on invalid interceptors."""
    if text is None:
        text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    statements: list[Statement] = []
    comments: list[str] = []
    interceptors: list[tuple[int, Interceptor]] = []
    current: list[str] | None = None
    start = 0

    def finish() -> None:
        nonlocal current, comments, interceptors
        assert current is not None
        stmt = Statement(start, comments, current, [i for _, i in interceptors])
        for lineno, icp in interceptors:
            if isinstance(icp, TemplateInterceptor):
                try:
                    icp.template = Template(stmt.sql)
                except TemplateError as exc:
                    raise CaseError(path, start, f"TEMPLATE: {exc}") from None
        statements.append(stmt)
        current, comments, interceptors = None, [], []

    for index, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip()
        if current is None:
            if not stripped:
                continue
            if stripped.startswith("--"):
                comments.append(line)
                if line.lstrip().startswith(INTERCEPTOR_PREFIX) or stripped == INTERCEPTOR_PREFIX.strip():
                    body = line.lstrip()[len(INTERCEPTOR_PREFIX):]
                    icp = parse_interceptor(body, path, index)
                    if icp is not None:
                        interceptors.append((index, icp))
                continue
            current = [line]
            start = index
        else:
            current.append(line)
        if stripped.endswith(";"):
            finish()
    if current is not None:
        finish()
    if interceptors:
        raise CaseError(path, interceptors[-1][0], "interceptor is not followed by a statement")
    return Case(path, name, statements, comments)
