"""The HTTP server: uvicorn with the connection timeouts a public service needs.

uvicorn times out an idle keep-alive connection only after it has answered a request, so a
client that opens a connection, sends part of its headers and goes quiet (slowloris) would hold
it forever. The protocol below gives every request's headers a deadline of their own.
"""

import asyncio

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.core.settings import Settings
from app.core.settings import settings as default_settings


class HeaderDeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol; a connection whose next request's headers are not complete within
    `header_timeout` seconds of it starting to wait for them is closed."""

    header_timeout: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting_for_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _watch_headers(self) -> None:
        if not self._waiting_for_headers():
            self._disarm()
        elif self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if getattr(self, "_header_deadline", None) is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self._waiting_for_headers():
            self.transport.close()


class ConfiguredH11Protocol(HeaderDeadlineH11Protocol):
    """The header deadline from the settings; uvicorn imports it by name in every worker process."""

    header_timeout = default_settings.http_header_timeout_seconds


def run(*, settings: Settings, host: str, port: int, workers: int = 1) -> None:
    """Serve the API until SIGINT or SIGTERM, in `workers` processes sharing the socket (each its
    own app, pools and caches; what they must agree on lives in PostgreSQL)."""
    uvicorn.run(
        "app.main:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http="app.core.server:ConfiguredH11Protocol",
        timeout_keep_alive=settings.http_keep_alive_seconds,
        log_config=None,  # uvicorn's lines go through our JSON handler, with request ids
    )
