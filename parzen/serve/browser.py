"""Driving the page of ``parzen serve`` from Playwright: the browser test and the brush benchmark.

Chromium runs headless with nothing that reaches the network on its own (no sync, no component
updates, no background networking, no QUIC), as CI's sandbox-less container needs it.
"""

from __future__ import annotations

#: Chromium's flags for the tests and benchmarks.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def wait_drawn(page, updates: int, timeout_ms: float = 60_000) -> None:
    """Wait until the page has drawn ``updates`` answers and no brush is waiting for one.

    Parameters
    ----------
    page : playwright.sync_api.Page
    updates : int
        The count of drawn answers to reach (``<body data-updates>``).
    timeout_ms : float
        Playwright's timeout.
    """
    page.wait_for_function(f"Number(document.body.dataset.updates || 0) >= {int(updates)} "
                           "&& document.body.dataset.busy === '0'", timeout=timeout_ms)


def brush_with_mouse(page, column: str, start: float, stop: float) -> None:
    """Drag across the chart of ``column`` from ``start`` to ``stop`` (fractions of its width).

    Parameters
    ----------
    page : playwright.sync_api.Page
    column : str
    start, stop : float
        Where the drag begins and ends, 0 (left) to 1 (right).
    """
    box = page.locator(f'figure[data-column="{column}"] svg').bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + start * box["width"], y)
    page.mouse.down()
    page.mouse.move(box["x"] + stop * box["width"], y, steps=4)
    page.mouse.up()


def chart_values(page, column: str) -> list[float | None]:
    """The numbers a chart draws (its bars' ``data-value``), as the API gave them.

    Parameters
    ----------
    page : playwright.sync_api.Page
    column : str

    Returns
    -------
    list of float or None
    """
    return page.eval_on_selector_all(f'figure[data-column="{column}"] rect.bar',
                                     "bars => bars.map(b => b.dataset.value === '' ? null : Number(b.dataset.value))")
