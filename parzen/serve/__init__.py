"""``parzen serve``: an HTTP server answering SQL and a crossfilter page from a database's synopses.

:class:`~parzen.serve.service.Service` answers (no HTTP); :func:`~parzen.serve.app.create_app`
puts it behind Starlette; :func:`run` serves it with uvicorn.  Needs the ``serve`` extra
(``pip install "parzen[serve]"``: starlette, uvicorn); docs/serve.md.
"""

from __future__ import annotations

from .._extras import require


def run(database, *, host: str = "127.0.0.1", port: int = 8000, timeout: float = 10.0, allow_exact: bool = True,
        max_body: int | None = None, on_stale: str = "warn", log_level: str = "info") -> None:
    """Serve ``database``'s synopses over HTTP until interrupted.

    Parameters
    ----------
    database : str or pathlib.Path
        A DuckDB file with synopses, opened read-only.
    host, port : str, int
        Where to listen (default: this machine only).
    timeout : float
        Seconds a request may take (503 / 504 after).
    allow_exact : bool
        Serve exact answers from DuckDB (``"exact": true`` and the page's toggle).
    max_body : int, optional
        The largest request body in bytes (default :data:`parzen.serve.app.MAX_BODY`).
    on_stale : {"warn", "error"}
        What answers from a synopsis whose table changed do.
    log_level : str
        uvicorn's log level.

    Raises
    ------
    MissingExtraError
        starlette or uvicorn is not installed.
    ValueError
        No database file, or no synopsis in it.
    """
    require("starlette", "uvicorn", extra="serve", what="parzen serve")
    import uvicorn

    from .app import MAX_BODY, create_app
    from .service import Service

    service = Service(database, timeout=timeout, allow_exact=allow_exact, on_stale=on_stale)
    try:
        app = create_app(service, max_body=MAX_BODY if max_body is None else max_body)
        # keep-alive connections idle up to 30 s (uvicorn's 5 s races clients that reuse one just then)
        uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_keep_alive=30, timeout_graceful_shutdown=2)
    finally:
        service.close()
