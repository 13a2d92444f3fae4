"""`transcli serve` as a test runs it: a real server on a free localhost port, and the
error shape every refusal must have."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import ROOT
from helpers.waiting import DEADLINE, running, wait_until

ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}  # as helpers.cli.run_cli runs transcli


class Server:
    """`transcli serve -m RUN --port 0 FLAGS` as a subprocess: its address is read from
    the line it prints once listening (no port is guessed); stderr goes to a file."""

    def __init__(self, run_dir: Path, folder: Path, *flags: str,
                 env: dict[str, str] | None = None):
        self.log = folder / "serve.log"
        self.tmp = Path(env["TMPDIR"]) if env and "TMPDIR" in env else None
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "transcli", "serve", "-m", str(run_dir),
                 "--checkpoint", "last", "--port", "0", *flags],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT,
                env={**ONE_THREAD, **(env or {})})
        try:
            found = wait_until(lambda: running(self.process, self.stderr) and re.search(
                r"serving on http://([\d.]+):(\d+)", self.stderr()), "serve listening",
                seen=self.stderr)
            self.host, self.port = found.group(1), int(found.group(2))
            self.url = f"http://{self.host}:{self.port}"
            assert self.request("GET", "/health")[0] == 200
        except BaseException:
            self.stop()
            raise

    def kept_files(self) -> list[Path]:
        """The translated files the server keeps (started with a TMPDIR of its own)."""
        assert self.tmp is not None, "start the server with env={'TMPDIR': ...}"
        return list(self.tmp.glob("transcli-serve-*/*"))

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None, timeout: float = DEADLINE,
                raw: bool = False) -> tuple[int, Any, dict[str, str]]:
        """(status, decoded JSON body (with `raw`, its bytes), headers); a dict or list
        body is sent as JSON."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
            return (response.status, data if raw else json.loads(data),
                    dict(response.getheaders()))
        finally:
            connection.close()

    def upload(self, name: str, data: bytes, headers: dict[str, str] | None = None,
               **fields: str) -> tuple[int, Any, dict[str, str]]:
        """POST /translate_file: the file `name` holding `data`, and `fields`."""
        body, kind = multipart(fields, {"file": (name, data)})
        return self.request("POST", "/translate_file", body,
                            {"Content-Type": kind, **(headers or {})})

    def translate(self, q: str | list[str], **fields: Any) -> tuple[int, Any]:
        status, body, _ = self.request("POST", "/translate",
                                       {"q": q, "source": "en", "target": "es", **fields})
        return status, body

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]
              ) -> tuple[bytes, str]:
    """A multipart/form-data body of `fields` and `files` (name -> (file name, bytes)), as
    a browser's form sends it, and its Content-Type."""
    boundary = "transcli-test-boundary"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
             f"{value}\r\n".encode() for name, value in fields.items()]
    parts += [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
              f'filename="{file_name}"\r\nContent-Type: text/plain\r\n\r\n'.encode()
              + data + b"\r\n" for name, (file_name, data) in files.items()]
    return (b"".join(parts) + f"--{boundary}--\r\n".encode(),
            f"multipart/form-data; boundary={boundary}")


def assert_error(status: int, body: Any, expected: int) -> None:
    """LibreTranslate's error shape: {"error": one line}."""
    assert status == expected, body
    assert isinstance(body, dict) and list(body) == ["error"], body
    assert isinstance(body["error"], str) and body["error"].strip(), body
    assert "\n" not in body["error"] and "Traceback" not in body["error"]
