"""A table's density synopsis and its byte form (what is stored in the database).

A synopsis keeps, for the numeric columns of one table: exact totals (row count, COUNT and SUM
per column, from the full table), a sample with one Gaussian bandwidth per column
(:class:`parzen.aqp.estimate.ColumnModel`): uniform, or, when built with ``group_by``,
stratified by the groups (sorted by group; each :class:`Group` holds its slice and exact
totals).  Optionally, its gridded form (:mod:`parzen.aqp.grid`): per column, cumulative integrals
of the density on a grid, which answer one-column range queries without the sample.
Optionally, regressions y ~ x (:mod:`parzen.aqp.regression`): SUM/AVG(y) under a range on x as
the integral of r(x) against the gridded density of x.
Per group and column, a mergeable summary (COUNT, mean, M2, MIN, MAX: :mod:`parzen.aqp.column_summary`)
and an HLL sketch of the distinct values (:mod:`parzen.aqp.sketches`), for VAR/STDDEV, MIN/MAX and
COUNT(DISTINCT) (:mod:`parzen.aqp.aggregates`).
Bytes: 8 per sampled value, 32 per grid point, 8 per regression coefficient, 40 per group and column
of the summary, up to 2 kB per group and column of the sketches, a few hundred for the rest;
:meth:`Synopsis.nbytes`.
It also keeps what judges its staleness, the table's row count and content fingerprint when it was
built (:func:`parzen.aqp.build.fingerprint_sql`), or for one built from Parquet files those files'
sizes and modification times (:func:`parzen.distributed.synopsis.parquet_source`), and what rebuilds it alike: the requested sample
size, the bandwidth option and the seed (:meth:`Synopsis.build_options`).
For :meth:`parzen.aqp.Engine.refresh` after appends (:mod:`parzen.aqp.appends`) it keeps each sampled
row's random key (8 bytes per sampled row: the sample is each stratum's rows of the smallest keys),
one past the table's largest rowid and the rows of its last full build.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np

from .categories import Categories
from .column_summary import ColumnSummary
from .cubes import Cube
from .estimate import ColumnModel
from .grid import ColumnGrid
from .regression import Regression
from .sketches import DistinctSketches

#: Bumped when the byte layout changes; older payloads are refused with a rebuild hint.
FORMAT_VERSION = 12  # 9: categorical columns (categories.py), join synopses (joins.py), and the sample's keys,
#                       the rowid end and the rows of the last full build (appends.py); 10: DATE / TIMESTAMP
#                       columns modelled as days, their logical types kept (dates.py); 11: exact aggregate
#                       tables (cubes.py); 12: an exact aggregate table may keep only some measures
#                       (cubes.CubeTable.measures: a parzen that reads 11 only would take one measure's sums for another's)
#: Older formats this parzen still reads: what they lack has its default (a format-9 synopsis models no dates,
#: a format-10 one keeps no exact aggregate tables, a format-11 one's tables keep every measure).
READABLE_VERSIONS = (9, 10, 11, FORMAT_VERSION)


class CorruptSynopsis(ValueError):
    """A stored synopsis failed its checksum or could not be decoded."""


class OutdatedSynopsis(CorruptSynopsis):
    """A stored synopsis is intact but written in a format this parzen no longer reads."""


@dataclass
class Group:
    """One stratum: its key (values of the group columns), exact totals and sample rows."""

    key: tuple
    rows: int
    totals: dict[str, tuple[int, float]]  # column -> (COUNT(col), SUM(col))
    start: int
    stop: int


@dataclass
class Synopsis:
    table: str
    row_count: int
    models: dict[str, ColumnModel]
    totals: dict[str, tuple[int, float]]
    sample: dict[str, np.ndarray]
    group_by: tuple[str, ...] = ()
    groups: list[Group] = field(default_factory=list)
    grids: dict[str, ColumnGrid] = field(default_factory=dict)
    grid_points: int = 0  # asked for at build time (0: no grids)
    regressions: dict[tuple[str, str], Regression] = field(default_factory=dict)  # (y, x) -> r
    built_at: str = ""
    build_seconds: float = 0.0
    fingerprint: int = 0  # SUM(hash(modelled columns, group columns)) over the table's rows
    requested_sample: int = 0  # build(sample=...): the drawn sample adds the groups' top-ups
    bandwidth: str | float | dict = "plugin"  # build(bandwidth=...)
    seed: int = 0
    source: dict = field(default_factory=dict)  # {}: the database table; else Parquet files or a dask DataFrame
    summary: ColumnSummary | None = None  # per group and column: COUNT, mean, M2, MIN, MAX (column_summary.py)
    sketches: DistinctSketches | None = None  # per group and column: HLL of the distinct values (sketches.py)
    categories: Categories | None = None  # categorical columns: exact values and counts, sampled codes (categories.py)
    #: the join synopsis's foreign keys (joins.py): {"child", "column", "parent", "key"} per edge, fact table first,
    #: with the dimension's carried "columns", the child's rows of NULL key ("nulls") and the dimension's content
    #: "fingerprint" (a decimal string; absent in synopses built before it was kept)
    joins: list[dict] = field(default_factory=list)
    dimension_rows: dict[str, int] = field(default_factory=dict)  # per joined dimension table, its exact rows
    #: a join synopsis's fact rows alone: SUM(hash(its covered columns and foreign keys)) (joins.fact_columns; 0: not kept)
    fact_fingerprint: int = 0
    sample_keys: np.ndarray | None = None  # uint64 per sampled row: its random key (appends.py)
    rowid_end: int = 0  # one past the table's largest rowid when the synopsis last read it (0: not kept)
    full_build_rows: int = 0  # rows when it was last built in full (0: this one); appends.py
    refreshed: str = ""  # what the last Engine.refresh did: "" (a build), rows appended, or why it rebuilt
    #: modelled DATE / TIMESTAMP columns (as days since 1970-01-01) -> "date" or "timestamp" (dates.py)
    temporal: dict[str, str] = field(default_factory=dict)
    cube: Cube | None = None  # exact aggregate tables over categorical columns (cubes.py)
    cube_bytes: int | None = None  # build(cube_bytes=...): None, the default budget (cubes.default_budget)
    cube_views: list[list[str] | dict[str, list[str]]] | None = None  # build(cube=...): the tables as listed

    @property
    def group_keys(self) -> list[tuple]:
        """The groups' keys in order (``[()]`` for an ungrouped synopsis): the rows of :attr:`summary`."""
        return [g.key for g in self.groups] or [()]

    @property
    def sample_size(self) -> int:
        return next(iter(self.sample.values())).size if self.sample else 0

    def build_options(self) -> dict:
        """The keyword arguments of :meth:`parzen.aqp.Engine.build` that rebuild this synopsis alike."""
        options = {"columns": list(self.models), "sample": self.requested_sample, "bandwidth": self.bandwidth,
                   "group_by": self.group_by, "grid": self.grid_points, "regression": list(self.regressions) or None,
                   "seed": self.seed}
        if self.cube_bytes is not None:
            options["cube_bytes"] = self.cube_bytes
        if self.cube_views is not None:
            options["cube"] = self.cube_views
        if self.joins:
            options["joins"] = {f"{e['child']}.{e['column']}": f"{e['parent']}.{e['key']}" for e in self.joins}
        if "pattern" in self.source:  # built from Parquet files: read them again
            options["source"] = self.source["pattern"]
        return options

    def nbytes(self) -> dict[str, int]:
        """Bytes of the sample, of the grids, of the regressions, of the exact aggregate tables and in all (serialised)."""
        return {"sample": sum(a.nbytes for a in self.sample.values()),
                "grid": sum(g.nbytes for g in self.grids.values()),
                "regression": sum(r.nbytes for r in self.regressions.values()),
                "cube": self.cube.nbytes if self.cube is not None else 0, "total": len(self.to_bytes())}

    def strata(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per sampled row: its stratum, its weight (table rows it stands for: rows_g / drawn_g)
        and its bandwidth factor (n / drawn_g)^(1/5) (bandwidths were chosen for all n rows)."""
        n = self.sample_size
        if not self.groups:
            return np.zeros(n, dtype=np.intp), np.full(n, self.row_count / max(n, 1)), np.ones(n)
        drawn = np.array([g.stop - g.start for g in self.groups], dtype=np.float64)
        stratum = np.repeat(np.arange(drawn.size), drawn.astype(np.intp))
        weight = np.array([g.rows for g in self.groups], dtype=np.float64) / np.maximum(drawn, 1.0)
        scale = (n / np.maximum(drawn, 1.0)) ** 0.2
        return stratum, weight[stratum], scale[stratum]

    # --- bytes ------------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        meta = {
            "format_version": FORMAT_VERSION,
            "table": self.table,
            "row_count": self.row_count,
            "models": [asdict(m) for m in self.models.values()],
            "totals": self.totals,
            "group_by": list(self.group_by),
            "groups": [asdict(g) for g in self.groups],
            "grid_points": self.grid_points,
            "regressions": [r.meta() for r in self.regressions.values()],
            "built_at": self.built_at,
            "build_seconds": self.build_seconds,
            "fingerprint": str(self.fingerprint),  # up to ~2^64 x rows: beyond what JSON readers keep exact
            "requested_sample": self.requested_sample,
            "bandwidth": self.bandwidth,
            "seed": self.seed,
            "source": self.source,
            "joins": self.joins,
            "dimension_rows": self.dimension_rows,
            "fact_fingerprint": str(self.fact_fingerprint),
            "rowid_end": self.rowid_end,
            "full_build_rows": self.full_build_rows,
            "refreshed": self.refreshed,
            "temporal": self.temporal,
            "cube_bytes": self.cube_bytes,
            "cube_views": self.cube_views,
        }
        arrays = {f"sample/{k}": v for k, v in self.sample.items()}
        for column, grid in self.grids.items():
            arrays.update({f"grid/{name}/{column}": v for name, v in grid.arrays().items()})
        arrays.update({f"regression/{k}": r.coef for k, r in enumerate(self.regressions.values())})
        if self.sample_keys is not None:
            arrays["sample_keys"] = self.sample_keys
        if self.summary is not None:
            meta["summary_columns"] = list(self.summary.columns)
            arrays.update({f"summary/{name}": v for name, v in self.summary.arrays().items()})
        if self.categories is not None:
            meta["categories"] = self.categories.meta()
            arrays.update({f"category/{name}": v for name, v in self.categories.arrays().items()})
        if self.cube is not None:
            meta["cube"] = self.cube.meta()
            arrays.update({f"cube/{name}": v for name, v in self.cube.arrays().items()})
        if self.sketches is not None:
            meta["sketch_columns"] = list(self.sketches.columns)
            arrays.update({f"sketch/{name}": v for name, v in self.sketches.to_arrays().items()})
        buffer = io.BytesIO()
        # cast: the stub lets a key of **arrays be allow_pickle (bool); these keys are "sample/...", "grid/...", ...
        np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **cast(dict[str, Any], arrays))
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes, *, where: str = "") -> Synopsis:
        try:
            with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
                meta = json.loads(arrays["meta"].tobytes().decode())
                sample = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("sample/")}
                grid_arrays: dict[str, dict[str, np.ndarray]] = {}
                for k in arrays.files:
                    if k.startswith("grid/"):
                        _, name, column = k.split("/", 2)
                        grid_arrays.setdefault(column, {})[name] = arrays[k]
                grids = {c: ColumnGrid.from_arrays(a) for c, a in grid_arrays.items()}
                coefficients = [arrays[f"regression/{k}"] for k in range(len(meta.get("regressions", ())))]
                summary_arrays = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("summary/")}
                sketch_arrays = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("sketch/")}
                category_arrays = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("category/")}
                cube_arrays = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("cube/")}
                sample_keys = arrays["sample_keys"] if "sample_keys" in arrays.files else None
        except Exception as err:  # any decoding failure means the bytes are not a synopsis
            raise CorruptSynopsis(f"the synopsis{where} cannot be decoded ({err}); rebuild it") from err
        if meta.get("format_version") not in READABLE_VERSIONS:
            raise OutdatedSynopsis(
                f"the synopsis{where} has format {meta.get('format_version')}, this parzen reads "
                f"{', '.join(map(str, READABLE_VERSIONS))}; rebuild it"
            )
        try:
            synopsis = cls._of_meta(meta, sample, grids, coefficients, sample_keys)
        except (KeyError, TypeError) as err:  # a field this format keeps is missing: an earlier build of the format
            raise CorruptSynopsis(f"the synopsis{where} (format {meta.get('format_version')}) lacks {err}, which "
                                  "this format keeps; rebuild it") from err
        if "cube" in meta:
            synopsis.cube = Cube.from_stored(meta["cube"], cube_arrays)
        if "categories" in meta:
            synopsis.categories = Categories.from_stored(meta["categories"], category_arrays)
        if "summary_columns" in meta:
            synopsis.summary = ColumnSummary.from_arrays(meta["summary_columns"], synopsis.group_keys, summary_arrays)
        if "sketch_columns" in meta:
            try:
                synopsis.sketches = DistinctSketches.from_arrays(meta["sketch_columns"], synopsis.group_keys, sketch_arrays)
            except Exception as err:  # a sketch that does not deserialise means the bytes are not a synopsis
                raise CorruptSynopsis(f"the synopsis{where}'s distinct-count sketches cannot be decoded ({err}); "
                                      "rebuild it") from err
        return synopsis

    @classmethod
    def _of_meta(cls, meta: dict, sample: dict, grids: dict, coefficients: list, sample_keys) -> Synopsis:
        """The synopsis of a payload's decoded ``meta`` and arrays, before its optional parts (KeyError: a
        field missing)."""
        return cls(
            table=meta["table"],
            row_count=meta["row_count"],
            models={m["name"]: ColumnModel(**m) for m in meta["models"]},
            totals={k: tuple(v) for k, v in meta["totals"].items()},
            sample=sample,
            grids=grids,
            grid_points=meta["grid_points"],
            regressions={(r["y"], r["x"]): Regression.from_meta(r, c) for r, c in zip(meta["regressions"], coefficients)},
            group_by=tuple(meta["group_by"]),
            groups=[Group(**{**g, "key": tuple(g["key"]), "totals": {k: tuple(v) for k, v in g["totals"].items()}})
                    for g in meta["groups"]],
            built_at=meta["built_at"],
            build_seconds=meta["build_seconds"],
            fingerprint=int(meta["fingerprint"]),
            requested_sample=meta["requested_sample"],
            bandwidth=meta["bandwidth"],
            seed=meta["seed"],
            source=meta.get("source", {}),
            joins=meta["joins"],
            dimension_rows=meta["dimension_rows"],
            fact_fingerprint=int(meta.get("fact_fingerprint", 0)),
            sample_keys=sample_keys,
            rowid_end=meta["rowid_end"],
            full_build_rows=meta["full_build_rows"],
            refreshed=meta["refreshed"],
            temporal=meta.get("temporal", {}),
            cube_bytes=meta.get("cube_bytes"),
            cube_views=meta.get("cube_views"),
        )


def checksum(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()
