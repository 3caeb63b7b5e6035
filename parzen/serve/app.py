"""The HTTP side of ``parzen serve``: a Starlette app over a :class:`~parzen.serve.service.Service`.

Routes: ``GET /`` the page (``static/index.html``), ``GET /static/...`` its script and style,
``GET /tables``, ``POST /query``, ``POST /brush`` (docs/serve.md gives the JSON of each).  Every
error is JSON ``{"error": message}`` with its status: 400 a bad request or a query outside the
supported subset (the engine's message), 404 an unknown path, 405 a wrong method, 413 a body over
``max_body`` bytes, 415 a body that is not JSON, 503 the engine busy past the request's time, 504
an exact query stopped at its deadline, 500 anything else (its traceback goes to the server's log,
never to the client).  Requests run in worker threads (the engine's calls are blocking), each
bounded by the service's timeout.
"""

from __future__ import annotations

import json
import logging
from importlib import resources

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .service import Busy, Service, Timeout

#: The largest request body accepted, in bytes (a query's SQL, a brush's filters).
MAX_BODY = 64 * 1024

log = logging.getLogger("parzen.serve")


class RequestError(Exception):
    """A request the server refuses, with its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def create_app(service: Service, *, max_body: int = MAX_BODY) -> Starlette:
    """The ASGI app answering ``service``'s queries, tables and brushes, and serving the page.

    Parameters
    ----------
    service : Service
        The database and its synopses.
    max_body : int
        The largest request body in bytes (larger: HTTP 413).

    Returns
    -------
    starlette.applications.Starlette
    """
    static = resources.files("parzen.serve") / "static"
    page = (static / "index.html").read_text(encoding="utf-8")

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page, headers=_NO_FRAMES)

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    async def tables(request: Request) -> JSONResponse:
        return await _answer(service, lambda: {"tables": service.tables()})

    async def query(request: Request) -> JSONResponse:
        body = await _json_body(request, max_body, ("sql", "exact", "with_error", "max_rel_error"))
        return await _answer(service, lambda: service.query(
            body.get("sql"), exact=body.get("exact", False), with_error=body.get("with_error", False),
            max_rel_error=body.get("max_rel_error")))

    async def brush(request: Request) -> JSONResponse:
        body = await _json_body(request, max_body, ("table", "filters", "charts", "exact"))
        return await _answer(service, lambda: service.brush(body.get("table"), body.get("filters"), body.get("charts"),
                                                            exact=body.get("exact", False)))

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/favicon.ico", no_icon, methods=["GET"]),
        Route("/tables", tables, methods=["GET"]),
        Route("/query", query, methods=["POST"]),
        Route("/brush", brush, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]
    handlers = {HTTPException: _http_error, RequestError: _request_error, Exception: _server_error}
    return Starlette(routes=routes, exception_handlers=handlers)  # type: ignore[arg-type]


#: The page and the API are not to be framed by other sites (clickjacking).
_NO_FRAMES = {"X-Frame-Options": "DENY", "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'"}


async def _json_body(request: Request, max_body: int, keys: tuple[str, ...]) -> dict:
    """The request's JSON object, read up to ``max_body`` bytes; its keys among ``keys``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body:
        raise RequestError(413, f"the request body has {declared} bytes, more than the {max_body} allowed")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            raise RequestError(413, f"the request body is larger than the {max_body} bytes allowed")
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks) or b"null")
    except (ValueError, UnicodeDecodeError):
        raise RequestError(415, "the request body must be JSON (Content-Type: application/json)") from None
    if not isinstance(body, dict):
        raise RequestError(400, f"the request body must be a JSON object with keys {', '.join(keys)}")
    unknown = sorted(set(body) - set(keys))
    if unknown:
        raise RequestError(400, f"unknown keys {', '.join(map(repr, unknown))}; this endpoint takes {', '.join(keys)}")
    return body


async def _answer(service: Service, work) -> JSONResponse:
    """``work()`` in a worker thread, bounded by the service's timeout (plus a second for the
    answer's own deadline to fire first), its result or error as JSON."""
    try:
        with anyio.fail_after(service.timeout + 1.0):
            result = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except TimeoutError:
        raise RequestError(504, f"the request ran past {service.timeout:g} s") from None
    except Timeout as err:
        raise RequestError(504, str(err)) from None
    except Busy as err:
        raise RequestError(503, str(err)) from None
    except ValueError as err:  # UnsupportedQuery, bad SQL, unknown table or column, stale with on_stale="error"
        raise RequestError(400, str(err)) from None
    return JSONResponse(result)


async def _request_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestError)
    return JSONResponse({"error": str(exc)}, status_code=exc.status)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code)


async def _server_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("internal error answering %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "internal error (the server's log has the details)"}, status_code=500)
