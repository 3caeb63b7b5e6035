"""A bounded load test of a running ``parzen serve``: concurrent clients, a fixed number of requests each.

Each of ``clients`` clients (asyncio tasks sharing one ``httpx.AsyncClient``, one connection each)
sends ``requests`` requests one after another, cycling through the given ones, and records each
one's latency (from send to the whole body read) and status.  Latencies are wall-clock times on the
client, so they include queueing behind the other clients' requests.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LoadResult:
    """What a load test measured.

    Parameters
    ----------
    latencies : numpy.ndarray
        Seconds per request, in completion order.
    errors : list of str
        One line per request that failed (a status other than 200, or a connection error).
    seconds : float
        Wall-clock time of the whole test.
    """

    latencies: np.ndarray
    errors: list[str]
    seconds: float

    def summary(self) -> dict:
        """Requests, errors, throughput and latency percentiles (ms).

        Returns
        -------
        dict
        """
        ms = 1e3 * self.latencies
        return {"requests": int(ms.size), "errors": len(self.errors), "seconds": self.seconds,
                "requests_per_s": ms.size / self.seconds if self.seconds > 0 else float("nan"),
                "p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
                "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max())}


def run_load(url: str, requests: list[tuple[str, str, dict | None]], *, clients: int = 50, per_client: int = 200,
             timeout: float = 60.0) -> LoadResult:
    """Send ``clients`` x ``per_client`` requests to the server at ``url``.

    Parameters
    ----------
    url : str
        The server's base URL, e.g. ``"http://127.0.0.1:8000"``.
    requests : list of (str, str, dict or None)
        (method, path, JSON body) to cycle through; client c's j-th request is
        ``requests[(c + j) % len(requests)]``.
    clients : int
        Concurrent clients.
    per_client : int
        Requests each client sends, one after another.
    timeout : float
        Seconds before one request counts as failed.

    Returns
    -------
    LoadResult

    Raises
    ------
    ValueError
        No requests, or a non-positive count.
    """
    if not requests or clients < 1 or per_client < 1:
        raise ValueError("run_load needs requests, clients >= 1 and per_client >= 1")
    return asyncio.run(_load(url, requests, clients, per_client, timeout))


async def _load(url: str, requests, clients: int, per_client: int, timeout: float) -> LoadResult:
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(c: int, http: httpx.AsyncClient) -> None:
        for j in range(per_client):
            method, path, body = requests[(c + j) % len(requests)]
            started = time.perf_counter()
            try:
                response = await http.request(method, path, json=body)
                latencies.append(time.perf_counter() - started)
                if response.status_code != 200:
                    errors.append(f"{method} {path}: {response.status_code} {response.text[:200]}")
            except httpx.HTTPError as err:
                latencies.append(time.perf_counter() - started)
                errors.append(f"{method} {path}: {type(err).__name__} {err}")

    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as http:
        await asyncio.gather(*(client(c, http) for c in range(clients)))
    return LoadResult(np.array(latencies), errors, time.perf_counter() - started)
