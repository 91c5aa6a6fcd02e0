"""sqlness: the golden-file SQL test runner for tidegate (GreptimeDB/CeresDB sqlness format).

Run with ``python -m sqlness`` or ``tidegate-sqlness``; see sqlness/README.md for the format.
"""

from sqlness.case import Case, CaseError, Statement, parse_case
from sqlness.output import format_error, format_table
from sqlness.runner import CaseOutcome, Runner, RunnerConfig, RunSummary
from sqlness.server import DEFAULT_SERVER_CMD, ExternalServer, ManagedServer, ServerError
from sqlness.template import Template, TemplateError, render_template

__all__ = [
    "Case", "CaseError", "CaseOutcome", "DEFAULT_SERVER_CMD", "ExternalServer", "ManagedServer",
    "Runner", "RunnerConfig", "RunSummary", "ServerError", "Statement", "Template", "TemplateError",
    "format_error", "format_table", "parse_case", "render_template",
]
