"""The engine: Spark lifecycle, Delta storage and PostgreSQL statement execution.

``Engine`` owns the process's Spark and Delta table store; ``EngineSession`` runs one
connection's statements (see docs/DESIGN.md, "Engine").
"""

from engine.executor import Engine, EngineSession
from engine.spark import SparkRuntime

__all__ = ["Engine", "EngineSession", "SparkRuntime"]
