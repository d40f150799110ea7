"""``safelight serve``: the web dashboard of the queue and the library (ADR 0031).

Server-rendered pages (Jinja2) and a JSON API beside them (Starlette, served by
uvicorn), a little plain JavaScript for the live parts, every asset served from
``static/``. :func:`safelight.web.app.create_app` builds the app; docs/web.md says how
to run it, and what each route returns.
"""
