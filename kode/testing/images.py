"""A fake OpenAI images API on the loopback interface, for ``image_generate`` with the real client.

This module owns `FakeImagesServer`: a small HTTP server (the standard library's, in a thread,
so it serves asyncio and trio alike) that answers ``POST .../images/generations`` like the
OpenAI images API with ``b64_json`` images, up to the request's ``n``, or with the API's JSON
error shape when `FakeImagesServer.status` is not 200. It records every request (path,
headers, JSON body). It does not serve image URLs, edits or variations.

Example:
    ```python
    from kode.builtin.media import OpenAIImages
    from kode.testing.images import FakeImagesServer

    PIXEL = bytes.fromhex(  # a 1x1 PNG
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cff01f0005000201a5d7d8ab0000000049454e44ae426082"
    )
    with FakeImagesServer(images=[PIXEL]) as server:
        provider = OpenAIImages(base_url=server.base_url, api_key="-")
        (image,) = await provider.generate("a dot", size="auto", count=1)
    assert image.data == PIXEL
    assert server.requests[0][2]["prompt"] == "a dot"
    ```
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeImagesServer"]


class FakeImagesServer:
    """The OpenAI images API (``POST /v1/images/generations``) on 127.0.0.1, in a thread.

    Use it as a context manager; `base_url` is what `kode.builtin.media.OpenAIImages` (or the
    openai client) takes.

    Args:
        images: The images it answers with, in order (a request for ``n`` gets the first ``n``).
        status: The HTTP status; other than 200 answers with an error ("Your prompt was
            rejected.").
        revised: The ``revised_prompt`` of every image, if any.
    """

    def __init__(
        self, *, images: Sequence[bytes] = (), status: int = 200, revised: str | None = None
    ) -> None:
        self.images = list(images)
        """The images it answers with."""
        self.status = status
        """The HTTP status it answers with."""
        self.revised = revised
        """The ``revised_prompt`` of every image, if any."""
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        """Every request: its path, headers (lower-cased names) and JSON body."""
        self.port = 0
        """The port it listens on, once started."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The API's base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _answer(self, body: Any) -> tuple[int, bytes]:
        if self.status != 200:
            error = {"error": {"message": "Your prompt was rejected.", "type": "invalid_request"}}
            return self.status, json.dumps(error).encode()
        count = body.get("n", 1) if isinstance(body, dict) else 1
        data = []
        for image in self.images[:count]:
            item: dict[str, Any] = {"b64_json": base64.b64encode(image).decode()}
            if self.revised:
                item["revised_prompt"] = self.revised
            data.append(item)
        return 200, json.dumps({"created": 1, "data": data}).encode()

    def start(self) -> FakeImagesServer:
        """Start serving (`__enter__` does this)."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append((self.path, headers, body))
                status, raw = fake._answer(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving (`__exit__` does this)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeImagesServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
