"""Flows: SQL pipelines that keep a sink table up to date from source tables.

Layout:

* :mod:`engine.flows.syntax`: the FLOW statements (CREATE [OR REPLACE] FLOW, DROP FLOW, SHOW
  FLOWS, SHOW CREATE FLOW, SHOW FLOW STATUS, ADMIN FLUSH_FLOW, COMMENT ON FLOW), intervals,
  options;
* :mod:`engine.flows.plan`: a flow's sources, output, time window and sink rules (auto-created
  sink, schema check of an existing one);
* :mod:`engine.flows.windows`: window arithmetic over changed timestamps, range predicates;
* :mod:`engine.flows.runtime`: :class:`FlowRuntime` (scheduling, state, retries with backoff,
  statistics, pending-flow activation, restart) and the :class:`FlowExecutor` interface;
* :mod:`engine.flows.batch`: :class:`BatchExecutor`, ``flow_type = 'batching'``: dirty windows from
  the sources' change data feed, re-evaluated on Spark, one idempotent Delta merge into the sink;
* :mod:`engine.flows.statements`: the statements as an :class:`~engine.executor.EngineSession`
  runs them.

Metadata (definitions, per-source progress, statistics) lives in :mod:`catalog.flows`, in the
catalog's SQLite file.

The seam for streaming flows (part 2): everything except evaluation is shared. A streaming
executor subclasses :class:`FlowExecutor` with ``flow_type = "streaming"`` and
``periodic = False``; ``start(flow)`` launches its Structured Streaming query (checkpoints under
``<data-dir>/flows/<flow id>/``), ``run(flow, flush=True)`` waits until every commit made before
the call is in the sink, and ``stop(flow, dropped=...)`` stops the query (removing checkpoints when
dropped). Register it in :data:`engine.flows.runtime.EXECUTORS` (see ``_executors``); CREATE FLOW
accepts a ``flow_type`` only when an executor for it is registered. The sink rules
(:func:`engine.flows.plan.sink_definition`, :func:`~engine.flows.plan.check_sink`), statistics,
INFORMATION_SCHEMA views and statements need no change.
"""

from engine.flows.runtime import EXECUTORS, FlowExecutor, FlowRuntime, RunResult

__all__ = ["EXECUTORS", "FlowExecutor", "FlowRuntime", "RunResult"]
