"""`query ui`: a local, read-only web page over the index, and its JSON API.

::

    browser ──HTTP, 127.0.0.1 only, per-start token──► query.ui.app (starlette, run by uvicorn)
                                                          │ /api/<op>: the CLI's --json shapes
                                                          ▼
                                 Answerer: a running `query serve` first, else one in-process
                                 Engine (with a change feed); or, under `query serve --http`,
                                 that server's own engine thread

Nothing here writes a file: not into the index folder, not anywhere. The page (HTML, CSS, JS
in ``static/``) ships as package data, so it works offline and loads nothing from elsewhere.
"""
