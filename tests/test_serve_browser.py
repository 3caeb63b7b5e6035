"""The page of ``parzen serve`` in a real browser (Playwright driving Debian's chromium): it loads, a
brush (a mouse drag) redraws the other charts with the API's numbers, the exact toggle shows DuckDB's
beside them; page updates are timed and a screenshot is kept.

Skipped, saying why, only when playwright or chromium is missing (CI: ``apt-get install -y
chromium``; ``PARZEN_CHROMIUM`` names another executable).  The screenshot goes to
``$PARZEN_TEST_ARTEFACTS`` (default: the test's tmp_path).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="parzen serve needs the serve extra (starlette, uvicorn)")
pytest.importorskip("uvicorn", reason="parzen serve needs the serve extra (starlette, uvicorn)")
sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs playwright (pip install playwright)")
CHROMIUM = os.environ.get("PARZEN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"the browser test needs chromium ({CHROMIUM} is missing: apt-get install -y chromium)",
                allow_module_level=True)

import httpx
from serve_support import make_database, serving

from parzen.serve.browser import CHROMIUM_ARGS, brush_with_mouse, chart_values, wait_drawn


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    database = make_database(tmp_path_factory.mktemp("browser") / "t.duckdb", 30_000)
    with serving(database) as url:
        yield url


@pytest.fixture(scope="module")
def page(server):
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1300, "height": 800}, bypass_csp=True)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(server + "/")
        wait_drawn(page, 1)
        yield page
        assert errors == []
        browser.close()


def api_brush(server: str, filters: dict, exact: bool = False) -> dict:
    response = httpx.post(server + "/brush", json={"table": "t", "filters": filters, "exact": exact}, timeout=30)
    response.raise_for_status()
    return {c["column"]: c for c in response.json()["charts"]}


def test_the_page_loads_every_chart(page):
    columns = page.eval_on_selector_all("figure", "fs => fs.map(f => f.dataset.column)")
    assert columns == ["x", "y", "k", "g"]
    assert page.locator('figure[data-column="x"] rect.bar').count() >= 40
    assert page.locator('figure[data-column="x"] path.curve').get_attribute("d").startswith("M")


def test_a_brush_redraws_the_other_charts_with_the_apis_numbers(page, server):
    before = {c: chart_values(page, c) for c in ("x", "y", "g")}
    updates = int(page.get_attribute("body", "data-updates"))
    brush_with_mouse(page, "x", 0.2, 0.45)
    wait_drawn(page, updates + 1)
    filters = json.loads(page.get_attribute("body", "data-filters"))
    assert set(filters) == {"x"} and filters["x"][0] < filters["x"][1]
    after = {c: chart_values(page, c) for c in ("x", "y", "g")}
    assert after["x"] == before["x"]  # a chart is not filtered by its own brush
    assert after["y"] != before["y"] and after["g"] != before["g"]
    api = api_brush(server, filters)
    for column in ("x", "y", "k", "g"):
        assert chart_values(page, column) == api[column]["values"]
    assert sum(after["g"]) < sum(before["g"])


def test_the_exact_toggle_shows_duckdbs_answers_beside(page, server):
    updates = int(page.get_attribute("body", "data-updates"))
    page.check("#exact")
    wait_drawn(page, updates + 1)
    filters = json.loads(page.get_attribute("body", "data-filters"))
    api = api_brush(server, filters, exact=True)
    exact = page.eval_on_selector_all('figure[data-column="g"] rect.bar', "bs => bs.map(b => Number(b.dataset.exact))")
    assert exact == api["g"]["exact"]["values"]
    assert "exact" in page.locator('figure[data-column="y"] .timing').text_content()
    page.uncheck("#exact")
    wait_drawn(page, updates + 2)


def test_page_updates_are_timed_and_a_screenshot_is_kept(page, tmp_path):
    timings = []
    for k in range(20):
        start = 0.05 + 0.03 * k
        updates = int(page.get_attribute("body", "data-updates"))
        brush_with_mouse(page, "y", start, start + 0.3)
        wait_drawn(page, updates + 1)
        timings.append(float(page.get_attribute("body", "data-last-ms")))
    p95 = float(np.percentile(timings, 95))
    print(f"page update over 20 brushes: p50 {np.median(timings):.1f} ms, p95 {p95:.1f} ms")
    assert p95 < 2000  # the 100 ms target is measured on a quiet machine (benchmarks/serve_brush.py)
    folder = Path(os.environ.get("PARZEN_TEST_ARTEFACTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "serve_page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
