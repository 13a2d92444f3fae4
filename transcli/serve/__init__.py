"""`transcli serve`: a run's model behind a web page and the HTTP API that LibreTranslate
clients speak.

- `protocol.py` — LibreTranslate's fields and answer shapes: the checks and their
  one-line errors, a request's text as lines and back.
- `bodies.py` — reading a body (JSON or form, one file part where asked), bounded.
- `translating.py` — a checked request to its answer: detection, the model's lines,
  alternatives.
- `detection.py` — which of English and Spanish a text is in (py3langid).
- `documents.py` — HTML fragments and files through the document layer, read and
  written on threads of their own.
- `files.py` — the file formats translated, and the store of translated files.
- `ratelimit.py` — `--req-limit`: requests per client per minute.
- `batcher.py` — the one worker thread that owns the model, and the queue that merges
  concurrent requests into model batches without changing any translation.
- `limits.py` — the server's limits (characters, queue, timeouts, connections, bodies).
- `settings.py` — what the server offers and tells clients of itself.
- `connections.py` — uvicorn's HTTP connection with a deadline to read each request and a
  cap on open connections.
- `routes.py` — the endpoints; `web.py` — the page at `/` (its files in `web/`);
  `app.py` — the application: the error shape, CORS, the access log.
- `server.py` — startup (port, model, then listening) and a stop on a signal, bounded in
  time.

FastAPI, uvicorn, py3langid and the document readers are the optional extra
`transcli[serve]`; only the modules that `server.py` imports once the extra is checked
import them.
"""
