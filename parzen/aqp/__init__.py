"""Approximate query processing: density synopses of database tables (DuckDB by default).

    from parzen.aqp import Engine
    engine = Engine("flights.duckdb")
    engine.build("flights", group_by=["carrier"])
    engine.query("SELECT AVG(arr_delay) FROM flights WHERE distance BETWEEN 500 AND 1000")
"""

from .._extras import require

require("duckdb", "sqlglot", "pyarrow", "datasketches", extra="aqp", what="parzen.aqp")

from .engine import (
    Engine,
    StaleSynopsisError,
    StaleSynopsisWarning,
    SynopsisRebuiltWarning,
    UncheckedSynopsisWarning,
)
from .sql import UnsupportedQuery
from .synopsis import CorruptSynopsis, OutdatedSynopsis

__all__ = ["CorruptSynopsis", "Engine", "OutdatedSynopsis", "StaleSynopsisError", "StaleSynopsisWarning", "SynopsisRebuiltWarning",
           "UncheckedSynopsisWarning", "UnsupportedQuery"]
