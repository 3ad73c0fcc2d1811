"""How `dmm serve` holds its connections: limits and timeouts that idle or slow clients cannot
turn into a denial of service (docs/api.md, "Limits").

uvicorn alone counts every open connection against one concurrency limit and has no deadline
for a request's head: 257 idle sockets, or 300 clients sending a header line every 3 s, made
every other request 503 for as long as they stayed open. Here:

- a request's head (request line and headers) must arrive within HEADER_TIMEOUT of the
  connection opening or of the previous response; a connection that trickles it is closed;
- a connection idle between requests is closed after IDLE_TIMEOUT (uvicorn's keep-alive);
- at most ``max_connections`` are open; a new one beyond that closes the oldest connection
  still waiting for a request head (an idle or slow one), so a working client always gets in;
  only when every connection is busy with a request is the new one answered 503;
- at most MAX_IN_FLIGHT requests run at once (503 beyond), counted per request, not per
  connection;
- a request body must arrive within BODY_TIMEOUT (the app enforces it; http_api).

IO boundary: sockets (through uvicorn and asyncio).
"""

from __future__ import annotations

import resource
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0  # seconds for a request's head
IDLE_TIMEOUT = 5.0  # seconds a connection may sit idle between requests
BODY_TIMEOUT = 30.0  # seconds for a request's body
MAX_IN_FLIGHT = 256  # requests being answered at once
MAX_CONNECTIONS = 1000  # open connections (fewer when the process may open fewer files)


def max_connections() -> int:
    """MAX_CONNECTIONS, or half of what this process may open when that is less (git and
    SQLite need file descriptors too)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft // 2))


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline for every request head and a connection cap
    that sheds the oldest waiting connection instead of refusing working clients."""

    limit = MAX_CONNECTIONS

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened = self.loop.time()
        self._head_timer = None
        if len(self.connections) > self.limit:
            waiting = [c for c in self.connections
                       if c is not self and isinstance(c, GuardedH11) and c.waiting_for_head()]
            if waiting:
                oldest = min(waiting, key=lambda c: c._opened)
                oldest.transport.close()
            else:
                self.logger.warning("dmm serve: %d connections, every one busy: refusing one",
                                    len(self.connections))
                body = b'{"error": "too many connections: try again", "status": 503}'
                transport.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                                b"application/json\r\nConnection: close\r\nContent-Length: "
                                + str(len(body)).encode() + b"\r\n\r\n" + body)
                transport.close()
                return
        self._arm_head_timer()

    def waiting_for_head(self) -> bool:
        """No request is being answered: the connection is idle or sending a request head."""
        return self.cycle is None or self.cycle.response_complete

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(HEADER_TIMEOUT, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if getattr(self, "_head_timer", None) is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.waiting_for_head() and not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before:  # a whole request head arrived
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._arm_head_timer()  # before super(): a pipelined request cancels it
        super().on_response_complete()

    def connection_lost(self, exc) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)


class InFlight:
    """ASGI middleware: at most ``limit`` requests answered at once; 503 beyond."""

    def __init__(self, app, limit: int = MAX_IN_FLIGHT):
        self.app, self.limit, self.running = app, limit, 0
        self.last = time.monotonic()  # when a request last came or went

    def idle(self) -> float:
        """Seconds without a request (0 while one is answered): a scheduled scan waits."""
        return 0.0 if self.running else time.monotonic() - self.last

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.running >= self.limit:
            body = b'{"error": "the server is busy: try again", "status": 503}'
            await send({"type": "http.response.start", "status": 503, "headers": [
                (b"content-type", b"application/json"), (b"retry-after", b"1"),
                (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return None
        self.running += 1
        self.last = time.monotonic()
        try:
            return await self.app(scope, receive, send)
        finally:
            self.running -= 1
            self.last = time.monotonic()
