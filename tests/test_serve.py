"""``parzen serve``: the JSON API against Engine.query's answers, its errors, limits, concurrency and a
bounded load test on a real uvicorn process (the browser test is tests/test_serve_browser.py)."""

from __future__ import annotations

import threading
import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("starlette", reason="parzen serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("uvicorn", reason="parzen serve needs the serve extra (starlette, uvicorn)")
with warnings.catch_warnings():  # starlette 1.x: "Using httpx with starlette.testclient is deprecated"
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from serve_support import make_database, serving

from parzen.aqp import Engine
from parzen.aqp.engine import LOCKED_DOWN
from parzen.serve.app import create_app
from parzen.serve.load import run_load
from parzen.serve.service import Service

ROWS = 30_000


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    return make_database(tmp_path_factory.mktemp("serve") / "t.duckdb", ROWS)


@pytest.fixture(scope="module")
def service(database):
    service = Service(database, timeout=5.0)
    yield service
    service.close()


@pytest.fixture(scope="module")
def client(service):
    with TestClient(create_app(service, max_body=4096), raise_server_exceptions=False) as client:
        yield client


QUERIES = [
    "SELECT COUNT(*), AVG(y) FROM t WHERE x BETWEEN 10 AND 30",
    "SELECT g, COUNT(*), SUM(x) FROM t WHERE y > 0 GROUP BY g",
    "SELECT FLOOR(x / 5) * 5 AS bin, COUNT(*) AS n FROM t WHERE y < 1 GROUP BY bin",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("with_error", [False, True])
def test_query_answers_equal_engine_query(client, service, sql, with_error):
    response = client.post("/query", json={"sql": sql, "with_error": with_error})
    assert response.status_code == 200, response.text
    body = response.json()
    truth = service.engine.query(sql, with_error=with_error)
    assert body["form"] == truth.attrs["form"]
    assert body["latency_ms"] > 0
    shown = [c for c in truth.columns if not (with_error and (c.endswith((" low", " high"))))]
    assert body["columns"] == shown
    got = pd.DataFrame(body["rows"], columns=body["columns"])
    for column in shown:
        if truth[column].dtype.kind == "f":
            np.testing.assert_allclose(got[column].to_numpy(float), truth[column].to_numpy(float), rtol=1e-12)
        else:
            assert got[column].tolist() == truth[column].tolist()
    if with_error:
        for name, pairs in body["intervals"].items():
            np.testing.assert_allclose(np.array(pairs, dtype=float),
                                       truth[[f"{name} low", f"{name} high"]].to_numpy(float), rtol=1e-12)
    else:
        assert body["intervals"] is None


def test_exact_answers_come_from_duckdb(client, database):
    sql = "SELECT g, COUNT(*) AS n FROM t WHERE y > 0 GROUP BY g ORDER BY g"
    body = client.post("/query", json={"sql": sql, "exact": True}).json()
    assert body["form"] == "exact"
    with duckdb.connect(str(database), read_only=True, config=dict(LOCKED_DOWN)) as con:
        assert [tuple(r) for r in body["rows"]] == con.execute(sql).fetchall()


def test_tables_lists_synopses_with_their_charts(client):
    (table,) = client.get("/tables").json()["tables"]
    assert table["table"] == "t" and table["rows"] == ROWS and table["stale"] == ""
    assert {c["name"] for c in table["columns"]} == {"x", "y", "k"}
    charts = {c["column"]: c for c in table["charts"]}
    assert set(charts) == {"x", "y", "k", "g"}
    assert charts["g"]["labels"] == ["a", "b", "c"]
    assert 40 <= len(charts["x"]["labels"]) <= 52 and charts["x"]["curve"]


def test_the_page_and_its_assets_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    script = client.get("/static/app.js")
    assert script.status_code == 200 and "/brush" in script.text
    assert "http" not in script.text.replace("http://www.w3.org/2000/svg", "")  # nothing fetched from elsewhere
    assert client.get("/static/style.css").status_code == 200


def test_brush_answers_each_chart_from_the_synopsis_without_its_own_filter(client, service):
    filters = {"x": [10, 30], "g": ["a", "c"]}
    body = client.post("/brush", json={"table": "t", "filters": filters}).json()
    charts = {c["column"]: c for c in body["charts"]}
    assert set(charts) == {"x", "y", "k", "g"}
    assert body["server_ms"] > 0
    y = charts["y"]
    assert "\"x\" BETWEEN 10.0 AND 30.0" in y["sql"] and "\"g\" IN ('a', 'c')" in y["sql"]
    assert "\"x\" BETWEEN" not in charts["x"]["sql"] and "IN (" not in charts["g"]["sql"]
    truth = service.engine.query(y["sql"])
    width = y["labels"][1] - y["labels"][0]
    by_label = dict(zip(np.round(np.array(y["labels"]) / width).astype(int), y["values"]))
    for label, n in zip(truth["bin"], truth["n"]):
        assert by_label[round(label / width)] == pytest.approx(n, rel=1e-12)
    assert sum(v for v in y["values"]) == pytest.approx(float(truth["n"].sum()), rel=1e-12)
    group = service.engine.query(charts["g"]["sql"])
    assert dict(zip(charts["g"]["labels"], charts["g"]["values"])) == pytest.approx(dict(zip(group["g"], group["n"])))
    assert charts["x"]["curve"] is not None and len(charts["x"]["curve"]["x"]) > len(charts["x"]["labels"])


def test_brush_with_exact_answers_reports_their_error(client, database):
    body = client.post("/brush", json={"table": "t", "filters": {"y": [0, 1]}, "charts": ["k", "g"],
                                       "exact": True}).json()
    assert [c["column"] for c in body["charts"]] == ["k", "g"]
    g = body["charts"][1]
    with duckdb.connect(str(database), read_only=True, config=dict(LOCKED_DOWN)) as con:
        exact = dict(con.execute("SELECT g, COUNT(*) FROM t WHERE y BETWEEN 0 AND 1 GROUP BY g").fetchall())
    assert g["exact"]["values"] == [float(exact[v]) for v in g["labels"]]
    assert 0 <= g["exact"]["error"] < 0.05 and g["exact"]["ms"] > 0
    k = body["charts"][0]
    approx, truth = np.array(k["values"]), np.array(k["exact"]["values"])
    assert k["exact"]["error"] == pytest.approx(np.abs(approx - truth).sum() / truth.sum())


@pytest.mark.parametrize(("path", "body", "status", "match"), [
    ("/query", {"sql": "SELECT x FROM t WHERE y > 1"}, 400, "not supported by the approximate engine"),
    ("/query", {"sql": "SELEC COUNT(*) FROM t"}, 400, ""),
    ("/query", {"sql": "SELECT COUNT(*) FROM nowhere WHERE x > 1"}, 400, "nowhere"),
    ("/query", {"sql": "DROP TABLE t", "exact": True}, 400, "SELECT"),
    ("/query", {"sql": "SELECT * FROM read_csv('/etc/passwd')", "exact": True}, 400, ""),
    ("/query", {"sql": "SELECT nothing FROM t", "exact": True}, 400, "nothing"),
    ("/query", {"sql": ""}, 400, "non-empty string"),
    ("/query", {"sql": "SELECT COUNT(*) FROM t", "exact": "yes"}, 400, "true or false"),
    ("/query", {"sql": "SELECT COUNT(*) FROM t", "limit": 3}, 400, "unknown keys 'limit'"),
    ("/query", {"sql": "SELECT COUNT(*) FROM t WHERE x > 1", "max_rel_error": -1}, 400, "positive number"),
    ("/query", [1, 2], 400, "JSON object"),
    ("/brush", {"table": "nowhere"}, 400, "no synopsis of table 'nowhere'"),
    ("/brush", {"table": "t", "filters": {"x": [3, 1]}}, 400, "lo <= hi"),
    ("/brush", {"table": "t", "filters": {"x": ["1", 2]}}, 400, "two numbers"),
    ("/brush", {"table": "t", "filters": {"g": ["zz"]}}, 400, "non-empty list of its values"),
    ("/brush", {"table": "t", "filters": {"t; DROP": [1, 2]}}, 400, "no chart"),
    ("/brush", {"table": "t", "charts": ["nope"]}, 400, "chart names"),
])
def test_errors_are_json_with_the_message_and_no_traceback(client, path, body, status, match):
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert match in message and "Traceback" not in message


def test_max_rel_error_is_passed_through_or_refused_clearly(client, service):
    response = client.post("/query", json={"sql": "SELECT COUNT(*) FROM t WHERE x > 10", "max_rel_error": 0.5})
    if service._passes_max_rel_error:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400 and "not supported in this version" in response.json()["error"]


def test_http_errors_are_json(client):
    assert client.get("/nowhere").json() == {"error": "Not Found"}
    response = client.get("/query")
    assert response.status_code == 405 and "error" in response.json()
    response = client.post("/query", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 415 and "JSON" in response.json()["error"]


def test_bodies_over_the_limit_are_refused(client):
    response = client.post("/query", json={"sql": "SELECT COUNT(*) FROM t WHERE x > " + "1" * 5000})
    assert response.status_code == 413 and "4096" in response.json()["error"]

    def chunks():  # no Content-Length: the limit is counted as the body streams in
        for _ in range(10):
            yield b" " * 1000

    response = client.post("/query", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_an_internal_error_is_a_500_without_details(client, service, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internals /srv/path")

    monkeypatch.setattr(service, "query", broken)
    response = client.post("/query", json={"sql": "SELECT COUNT(*) FROM t"})
    assert response.status_code == 500
    assert "secret" not in response.text and "internal error" in response.json()["error"]


def test_a_slow_exact_query_is_stopped_with_504_and_a_busy_engine_gives_503(database):
    service = Service(database, timeout=0.3)
    try:
        with TestClient(create_app(service)) as client:
            slow = "SELECT COUNT(*) FROM t a, t b, t c WHERE a.x + b.x + c.x > 0"
            response = client.post("/query", json={"sql": slow, "exact": True})
            assert response.status_code == 504 and "stopped" in response.json()["error"]
            # the cursor is usable again after the interrupt
            assert client.post("/query", json={"sql": "SELECT COUNT(*) FROM t", "exact": True}).status_code == 200
            taken = [service._engines.get_nowait() for _ in range(service._engines.qsize())]
            try:  # other requests hold every engine past this one's time
                response = client.post("/query", json={"sql": "SELECT COUNT(*) FROM t WHERE x > 1"})
            finally:
                for engine in taken:
                    service._engines.put(engine)
            assert response.status_code == 503 and "busy" in response.json()["error"]
    finally:
        service.close()


def test_the_database_is_opened_read_only(service, client):
    with pytest.raises(duckdb.Error):
        service.engine.con.execute("CREATE TABLE z AS SELECT 1")
    response = client.post("/query", json={"sql": "SELECT COUNT(*) FROM t", "exact": True})
    assert response.status_code == 200
    with pytest.raises(duckdb.Error):
        service._cursors.queue[0].con.execute("INSERT INTO t (x) VALUES (1)")


def test_no_exact_serves_synopses_only(database):
    service = Service(database, allow_exact=False)
    try:
        with TestClient(create_app(service)) as client:
            response = client.post("/query", json={"sql": "SELECT COUNT(*) FROM t", "exact": True})
            assert response.status_code == 400 and "--no-exact" in response.json()["error"]
            assert client.post("/query", json={"sql": "SELECT COUNT(*) FROM t WHERE x > 1"}).status_code == 200
    finally:
        service.close()


def test_concurrent_requests_from_threads_get_the_serial_answers(client, service):
    requests = [({"sql": sql}, "/query") for sql in QUERIES] + \
        [({"sql": QUERIES[1], "exact": True}, "/query"),
         ({"table": "t", "filters": {"x": [5, 25]}}, "/brush")]
    serial = [client.post(path, json=body).json() for body, path in requests]
    results: dict[tuple[int, int], dict] = {}
    failures: list[str] = []

    def worker(t: int) -> None:
        for j in range(12):
            k = (t + j) % len(requests)
            body, path = requests[k]
            response = client.post(path, json=body)
            if response.status_code != 200:
                failures.append(response.text)
            results[(t, j)] = (k, response.json())

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert len(results) == 8 * 12
    for k, body in results.values():
        if "charts" in body:
            assert [c["values"] for c in body["charts"]] == [c["values"] for c in serial[k]["charts"]]
        else:
            assert body["rows"] == serial[k]["rows"]


def test_load_50_clients_on_a_real_uvicorn_process(database):
    requests = [("POST", "/query", {"sql": sql}) for sql in QUERIES] + [
        ("POST", "/brush", {"table": "t", "filters": {"x": [5, 25]}}),
        ("GET", "/tables", None),
    ]
    with serving(database) as url:
        result = run_load(url, requests, clients=50, per_client=20)
    summary = result.summary()
    assert result.errors == [] and summary["requests"] == 1000
    assert summary["p99_ms"] > 0


def test_engine_and_service_answer_alike_on_a_fresh_engine(database, service):
    engine = Engine(database, read_only=True)
    try:
        sql = QUERIES[0]
        np.testing.assert_allclose(engine.query(sql).to_numpy(float), service.engine.query(sql).to_numpy(float))
    finally:
        engine.con.close()


def test_the_command_refuses_a_database_without_synopses(tmp_path):
    from typer.testing import CliRunner

    from parzen.cli import app

    path = tmp_path / "empty.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE a (x INTEGER)")
    result = CliRunner().invoke(app, ["serve", str(path)])
    assert result.exit_code == 2 and "holds no synopsis" in result.output
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "missing.duckdb")])
    assert result.exit_code == 2 and "no database file" in result.output
