"""A loopback server speaking OpenAI chat completions: records every request and answers through a test's policy."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

IMAGE_TOKENS = 100  # what the server bills per image part, so usage shows which requests carried images


def pixel_key(image: Image.Image) -> str:
    """Identity of an image's RGB pixels: equal for the dataset's image and the PNG the client sent of it."""
    rgb = image.convert("RGB")
    return hashlib.sha1(f"{rgb.size}".encode() + rgb.tobytes()).hexdigest()


@dataclass
class Received:
    """One chat-completions request as it reached the server."""

    body: dict[str, Any]
    parts: list[str]  # content part types of the user turn, in order ("text", "image_url", ...)
    text: str  # the text parts joined
    images: list[Image.Image]
    attempt: int  # how many identical requests (same text and images) arrived before this one
    at: float  # arrival time (time.monotonic)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.text, tuple(pixel_key(image) for image in self.images)


@dataclass
class Reply:
    """The server's answer: a completion (status 200), an HTTP error, or a dropped connection."""

    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


Policy = Callable[[Received], Reply]


def _decode(body: dict[str, Any], seen: Counter) -> Received:
    parts, texts, images = [], [], []
    for message in body["messages"]:
        content = message["content"]
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            parts.append(part["type"])
            if part["type"] == "text":
                texts.append(part["text"])
            elif part["type"] == "image_url":
                encoded = part["image_url"]["url"].split(",", 1)[1]
                images.append(Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB"))
    received = Received(body, parts, "\n".join(texts), images, 0, time.monotonic())
    received.attempt = seen[received.key]
    seen[received.key] += 1
    return received


def prompt_tokens(text: str, n_images: int) -> int:
    """What the server bills for a prompt: one token per word, IMAGE_TOKENS per image."""
    return len(text.split()) + IMAGE_TOKENS * n_images


def _completion(received: Received, text: str) -> dict[str, Any]:
    prompt = prompt_tokens(received.text, len(received.images))
    completion_tokens = len(text.split())
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": received.body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                      "total_tokens": prompt + completion_tokens}}


class ChatServer:
    """``with ChatServer(policy) as server:`` serves ``server.base_url`` on 127.0.0.1; ``server.log`` holds
    (request, reply) pairs in arrival order."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.log: list[tuple[Received, Reply]] = []
        self._lock = threading.Lock()
        self._seen: Counter = Counter()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handle(self, body: dict[str, Any]) -> tuple[Received, Reply]:
        with self._lock:  # attempt counting and the log must see requests one at a time
            received = _decode(body, self._seen)
            reply = self.policy(received)
            self.log.append((received, reply))
        return received, reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server dispatches to
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                received, reply = server._handle(body)
                if reply.drop:  # close without a response, as a crashed or overloaded server does
                    self.close_connection = True
                    return
                payload = json.dumps(_completion(received, reply.text) if reply.status == 200
                                     else {"error": {"message": f"test server says {reply.status}"}}).encode()
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

        return Handler
