"""Server-sent events over HTTP/1.1 chunked transfer, as OpenAI's streamed
chat completions send them (``data: {...}`` … ``data: [DONE]``). Shared by
the model endpoint's stand-in and the test answering model. Standard library
only: it runs in LightRAG's virtualenv."""
from __future__ import annotations


def start(handler) -> None:
    """The 200 and headers of an event stream on a BaseHTTPRequestHandler."""
    handler._status = 200
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()


def send(handler, payload: str) -> None:
    """One ``data:`` event as one chunk, flushed."""
    data = ("data: %s\n\n" % payload).encode("utf-8")
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    handler.wfile.flush()


def end(handler) -> None:
    """``data: [DONE]`` and the last, empty chunk."""
    send(handler, "[DONE]")
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()
