"""The venue console: a live view of a run in the browser, its JSON API and operator controls.

`onsite run SITE --console HOST:PORT` serves it, with controls, from a process of its own
beside the controller (process.py, __main__.py; the controls cross bridge.py);
`onsite console RUN_DIR --listen HOST:PORT` serves a read-only view of any run directory.
docs/console.md documents the API. The read model (`view`) needs no web stack, so
`onsite status` uses it without loading the server; import `app` and `server` for that.
"""
