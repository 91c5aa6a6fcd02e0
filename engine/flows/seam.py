"""The one seam between the flow runtime and the ways a flow evaluates.

:class:`FlowExecutor` is what an execution mode implements (:mod:`engine.flows.batch`,
:mod:`engine.flows.streaming`); :class:`ActiveFlow` is a flow as the runtime holds it, and
:class:`RunResult` what one evaluation reports. The runtime (:mod:`engine.flows.runtime`) imports
the executors; they import only this module, never the runtime.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalog.flows import FlowDef, FlowStats
from catalog.store import TableDef
from engine.flows.plan import FlowPlan

if TYPE_CHECKING:
    from engine.flows.runtime import FlowRuntime


@dataclass
class RunResult:
    rows_written: int
    rows_deleted: int = 0
    changed: bool = True  # False: no source moved, nothing was evaluated


class FlowCancelled(Exception):
    """The flow was dropped/replaced/stopped while a run was in flight."""


@dataclass
class ActiveFlow:
    """A flow the runtime knows, with its in-process state."""

    flow: FlowDef
    plan: FlowPlan | None = None
    plan_key: tuple = ()
    sink: TableDef | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_due: float = 0.0
    running: bool = False
    stopped: bool = False
    failures: int = 0
    force_full: bool = False
    running_job: tuple[Any, str] | None = None
    stats: FlowStats = field(default_factory=FlowStats)

    def check_cancelled(self) -> None:
        if self.stopped:
            raise FlowCancelled(self.flow.name)


class FlowExecutor(ABC):
    """How flows of one ``flow_type`` evaluate. Streaming (part 2) plugs in here: ``start`` launches
    its continuous query, ``run(flush=True)`` waits until everything committed before the call is
    in the sink, ``stop`` stops the query, and ``periodic = False`` keeps the runtime's scheduler
    out of its way."""

    flow_type: str = ""
    periodic: bool = True

    def __init__(self, runtime: FlowRuntime) -> None:
        self.runtime = runtime

    @abstractmethod
    def start(self, flow: ActiveFlow) -> None: ...

    @abstractmethod
    def run(self, flow: ActiveFlow, *, flush: bool) -> RunResult: ...

    @abstractmethod
    def stop(self, flow: ActiveFlow, *, dropped: bool) -> None: ...
