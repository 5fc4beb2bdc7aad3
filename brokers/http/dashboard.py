"""The dashboard: ``GET /`` is ``static/index.html``; ``/static/`` serves its JS, CSS and the vendored
charting library (uPlot, MIT, ``static/vendor``). No build step: the files are served as they are, and
the page polls ``/api/v1/overview`` once a second."""
from __future__ import annotations

from pathlib import Path

from aiohttp import web

STATIC_DIR = Path(__file__).parent / "static"


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


def add_dashboard_routes(app: web.Application) -> None:
    app.router.add_get("/", index)
    app.router.add_static("/static/", STATIC_DIR, follow_symlinks=False)
