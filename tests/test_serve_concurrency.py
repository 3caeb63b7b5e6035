"""``parzen serve`` answers approximate requests at once: answers and warnings of concurrent requests
equal their serial ones, and a request does not wait for another one in flight."""

from __future__ import annotations

import threading

import duckdb
import pytest

pytest.importorskip("starlette", reason="parzen serve needs the serve extra (starlette, uvicorn)")

from serve_support import make_database

from parzen.aqp import Engine
from parzen.serve.service import APPROXIMATE_ENGINES, Service

ROWS = 20_000


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """Table t and its synopsis, and table u whose synopsis is stale (a row appended after its build)."""
    path = make_database(tmp_path_factory.mktemp("serve_concurrency") / "t.duckdb", ROWS)
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE u AS SELECT * FROM t")
    engine = Engine(path)
    engine.build("u", ["x", "y"], group_by=["g"], sample=4_000, grid=256)
    engine.con.execute("INSERT INTO u SELECT * FROM t LIMIT 1")
    engine.con.close()
    return path


@pytest.fixture(scope="module")
def service(database):
    service = Service(database, timeout=30.0)
    yield service
    service.close()


#: (kind, arguments): queries with intervals on both tables (GROUP BY, IN, ranges, a histogram) and brushes.
REQUESTS = [
    ("query", {"sql": "SELECT g, COUNT(*), AVG(y) FROM t WHERE x BETWEEN 5 AND 30 GROUP BY g", "with_error": True}),
    ("query", {"sql": "SELECT k, COUNT(*) FROM t WHERE y > 0 GROUP BY k", "with_error": True}),
    ("query", {"sql": "SELECT SUM(x) FROM t WHERE g IN ('a', 'c') AND y < 0.5", "with_error": True}),
    ("query", {"sql": "SELECT FLOOR(x / 5) * 5 AS bin, COUNT(*) AS n FROM t WHERE y < 1 GROUP BY bin",
               "with_error": True}),
    ("query", {"sql": "SELECT g, COUNT(*) FROM u WHERE x > 12 GROUP BY g", "with_error": True}),
    ("query", {"sql": "SELECT AVG(y) FROM u WHERE x BETWEEN 3 AND 9", "with_error": True}),
    ("brush", {"table": "t", "filters": {"x": [5, 25]}}),
    ("brush", {"table": "t", "filters": {"y": [-1, 0.5], "g": ["a", "b"]}}),
    ("brush", {"table": "u", "filters": {"x": [2, 30]}}),  # each chart's warning, from the chart threads
]


def _ask(service: Service, kind: str, arguments: dict) -> dict:
    if kind == "query":
        return service.query(arguments["sql"], with_error=arguments["with_error"])
    return service.brush(arguments["table"], arguments["filters"])


def _comparable(answer: dict) -> dict:
    """The answer without its timings (which differ between runs)."""
    if "charts" in answer:
        return {"warnings": answer["warnings"],
                "charts": [{k: v for k, v in c.items() if k != "ms"} for c in answer["charts"]]}
    return {k: v for k, v in answer.items() if k != "latency_ms"}


def test_concurrent_answers_and_warnings_equal_the_serial_ones(service):
    serial = [_comparable(_ask(service, kind, arguments)) for kind, arguments in REQUESTS]
    stale = [k for k, (_, arguments) in enumerate(REQUESTS)
             if " u " in arguments.get("sql", "") + " " or arguments.get("table") == "u"]
    assert stale and all(any("stale" in w for w in serial[k]["warnings"]) for k in stale)
    assert all(serial[k]["warnings"] == [] for k in range(len(REQUESTS)) if k not in stale)
    start = threading.Barrier(12)
    found: list[tuple[int, dict]] = []
    failures: list[BaseException] = []

    def worker(t: int) -> None:
        start.wait()
        try:
            for j in range(3 * len(REQUESTS)):
                k = (t + j) % len(REQUESTS)
                found.append((k, _comparable(_ask(service, *REQUESTS[k]))))
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]
    assert len(found) == 12 * 3 * len(REQUESTS)
    for k, answer in found:
        assert answer == serial[k], REQUESTS[k]


def test_a_request_does_not_wait_for_one_in_flight(database):
    service = Service(database, timeout=0.5)
    try:
        held = [service._engines.get_nowait() for _ in range(APPROXIMATE_ENGINES - 1)]
        try:  # every engine but one is answering other requests: this one still gets the free one
            answer = service.query("SELECT COUNT(*) FROM t WHERE x > 1")
        finally:
            for engine in held:
                service._engines.put(engine)
        assert answer["form"] in ("grid", "sample") and answer["rows"][0][0] > 0
    finally:
        service.close()


def test_each_thread_records_its_own_warnings_while_blocks_overlap():
    import warnings

    from parzen.serve.captured import captured

    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    records: dict[str, list] = {}

    def first() -> None:
        with captured() as caught:
            a_in.set()
            b_in.wait()
            warnings.warn("from a", UserWarning)
        records["a"] = [str(m) for m in caught]
        a_out.set()

    def second() -> None:
        a_in.wait()
        with captured() as caught:
            b_in.set()
            a_out.wait()  # the first block has ended: this one still records its own
            warnings.warn("from b", UserWarning)
            warnings.warn("from b", UserWarning)  # the same place again: recorded again
        records["b"] = [str(m) for m in caught]

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert records == {"a": ["from a"], "b": ["from b", "from b"]}
    with warnings.catch_warnings(record=True) as outside:  # no block open: warnings go where they went before
        warnings.simplefilter("always")
        warnings.warn("outside", UserWarning)
    assert [str(w.message) for w in outside] == ["outside"]
