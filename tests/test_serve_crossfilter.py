"""``parzen serve``'s brushes (parzen.serve.crossfilter) against the API's answers to each chart's SQL:
the bars equal what ``POST /query`` gives, the density curves what the query path's one pass gives;
and the vectorized calibration of a histogram's bins against the scalar functions it repeats."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("starlette", reason="parzen serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("uvicorn", reason="parzen serve needs the serve extra (starlette, uvicorn)")
with warnings.catch_warnings():  # starlette 1.x: "Using httpx with starlette.testclient is deprecated"
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from serve_support import make_database

from parzen.aqp import calibration, histogram
from parzen.serve.app import create_app
from parzen.serve.service import Service, _aligned, _plan

ROWS = 30_000

BRUSHES = [
    {},
    {"x": [10, 30]},
    {"y": [-1.0, 0.5]},
    {"k": [5, 20]},
    {"g": ["b"]},
    {"x": [10, 30], "y": [-1.0, 0.5]},  # two ranges: each bin's 2 x 2 table raked and shrunk
    {"x": [10, 30], "y": [0, 1], "k": [3, 30]},  # three ranges: the ratio estimator
    {"k": [5, 20], "g": ["a", "c"]},  # an IN filter: the strata's wider kernels, no calibration
    {"x": [5, 60], "y": [-2, 2], "g": ["a", "c"]},
    {"y": [3.5, 9.0]},  # a few rows
    {"x": [20, 20]},  # a point: no row
    {"x": [1e6, 2e6], "k": [1, 2]},  # beyond the column's values
    {"k": [7.5, 7.6]},  # between two integers: an empty box
]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = Service(make_database(tmp_path_factory.mktemp("crossfilter") / "t.duckdb", ROWS), timeout=5.0)
    yield service
    service.close()


@pytest.fixture(scope="module")
def client(service):
    with TestClient(create_app(service), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("filters", BRUSHES, ids=lambda f: ",".join(f) or "none")
def test_every_chart_equals_the_query_api_on_its_sql(client, service, filters):
    brushed = client.post("/brush", json={"table": "t", "filters": filters})
    assert brushed.status_code == 200, brushed.text
    layout = service.layouts["t"]
    checked = layout.checked_filters(filters)
    charts = brushed.json()["charts"]
    assert [c["column"] for c in charts] == [*layout.histograms, *layout.groups]
    for chart in charts:
        plan = _plan(layout, chart["column"], checked)
        answered = client.post("/query", json={"sql": chart["sql"]}).json()
        frame = pd.DataFrame(answered["rows"], columns=answered["columns"])
        np.testing.assert_allclose(chart["values"], _aligned(plan, frame), rtol=1e-12, atol=0.0)
        assert chart["form"] == answered["form"]


@pytest.mark.parametrize("filters", BRUSHES, ids=lambda f: ",".join(f) or "none")
def test_density_curves_equal_the_query_paths_pass(service, filters):
    layout, engine = service.layouts["t"], service.engine
    checked = layout.checked_filters(filters)
    body = service.brush("t", filters)
    curves = {c["column"]: c["curve"] for c in body["charts"] if c["type"] == "histogram"}
    for name, chart in layout.histograms.items():
        if not chart.curve_factor:
            assert curves[name] is None
            continue
        bars = engine._resolved_histogram(histogram.parse_histogram(layout.histogram_sql(name, checked)))
        fine = engine._resolved_histogram(histogram.parse_histogram(layout.histogram_sql(name, checked, curve=True)))
        synopsis = engine.synopsis("t")
        _, _, labels, masses = histogram.answer_with_density(bars, fine, synopsis, engine._layouts["t"])
        width = chart.width / chart.curve_factor
        np.testing.assert_allclose(curves[name]["x"], labels + width / 2, rtol=1e-15)
        np.testing.assert_allclose(curves[name]["y"], masses * chart.curve_factor, rtol=1e-12, atol=1e-300)


def test_a_brush_reports_each_charts_time_and_the_server_time(service):
    body = service.brush("t", {"x": [10, 30], "g": ["a"]})
    assert all(c["ms"] >= 0 for c in body["charts"])
    assert body["server_ms"] >= sum(c["ms"] for c in body["charts"])


def _scalar_rake(n11, n1, m1, n, r, c):
    found = calibration.rake_2x2(n11, n1, m1, n, r, c)
    return math.nan if found is None else found


def test_vectorized_raking_gives_the_scalar_functions_numbers():
    rng = np.random.default_rng(3)
    size = 5000
    n = 1e6
    n1 = rng.uniform(0, n, size) * rng.choice([1.0, 1e-4], size)
    m1 = rng.uniform(0, n, size) * rng.choice([1.0, 1e-4], size)
    n11 = np.minimum(n1, m1) * rng.uniform(-0.1, 1.1, size)
    n11[::7] = n1[::7] * m1[::7] / n  # independent tables: theta = 1, the linear root
    r = rng.uniform(0, n, size) * rng.choice([1.0, 1e-4], size)
    c = rng.uniform(0, n, size) * rng.choice([1.0, 1e-4], size)
    raked = calibration.rake_2x2_each(n11, n1, m1, n, r, c)
    expected = np.array([_scalar_rake(*v, n, *w) for v, w in zip(zip(n11, n1, m1), zip(r, c))])
    np.testing.assert_array_equal(raked, expected)  # NaN where the scalar function gives None
    assert 0.05 < np.isnan(raked).mean() < 0.95  # both branches met
    kept = ~np.isnan(raked)
    shrunk = calibration.shrink_to_independence_each(raked[kept], n, r[kept], c[kept], 8000.0, 0.1)
    expected = [calibration.shrink_to_independence(x, n, a, b, 8000.0, 0.1)
                for x, a, b in zip(raked[kept], r[kept], c[kept])]
    np.testing.assert_array_equal(shrunk, expected)
