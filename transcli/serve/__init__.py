"""`transcli serve`: a run's model behind an HTTP API that LibreTranslate clients speak.

- `protocol.py` — LibreTranslate's request and response shapes: reading a body (JSON or
  form), the checks and their one-line errors, a request's text as lines and back.
- `batcher.py` — the one worker thread that owns the model, and the queue that merges
  concurrent requests into model batches without changing any translation.
- `limits.py` — the server's limits (characters, queue, timeouts, connections, the body).
- `connections.py` — uvicorn's HTTP connection with a deadline to read each request and a
  cap on open connections.
- `app.py` — the routes (FastAPI), the error shape, the access log.
- `server.py` — startup (port, model, then listening) and a stop on a signal, bounded in
  time.

FastAPI and uvicorn are the optional extra `transcli[serve]`; only `server.py`,
`connections.py` and `app.py` import them.
"""
