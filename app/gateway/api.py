"""The gateway's client of the REST API: pooled, bounded in time, retried once when the connection
fails, and every write carrying an Idempotency-Key so that nothing is applied twice.

A write's key is derived from the call itself (the session, the method, the path and the body),
so the same call made again, by this retry or by the agent after a degraded answer while the
API was slow, is applied once: the API answers a repeat with the first answer. A retry follows
a failure to connect (nothing was sent), or a connection dropped after sending when repeating
is safe: a read, or a write with its key."""

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

# Nothing reached the API: trying again cannot apply anything twice.
_NOT_CONNECTED = (httpx.ConnectError,)
# The request may have reached the API (a pooled connection it closed between requests fails
# like this too): repeated only when repeating is safe.
_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class ApiProblem(Exception):
    """The API answered with a problem detail (RFC 9457)."""

    def __init__(self, problem: dict[str, Any]) -> None:
        self.problem = problem
        super().__init__(f"{problem.get('title', 'Error')}: {problem.get('detail', '')}")


class ApiUnavailable(Exception):
    """The API did not answer within the deadline, could not be reached, or answered 503."""


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: dict[str, Any] | None
    session_id: str
    authorization: str | None
    reads: bool = False  # changes nothing: safe to send twice
    keyed: bool = False  # a write sent with its Idempotency-Key: applied once however often sent

    def idempotency_key(self) -> str | None:
        """The same for the same call (see the module's docstring)."""
        if not self.keyed:
            return None
        call = json.dumps([self.session_id, self.method, self.path, self.body], sort_keys=True, separators=(",", ":"))
        return "mcp-" + hashlib.sha256(call.encode()).hexdigest()

    @property
    def repeatable(self) -> bool:
        return self.reads or self.keyed


class Api:
    def __init__(self, base_url: str, *, timeout_seconds: float, transport: httpx.AsyncBaseTransport | None = None):
        self.timeout_seconds = timeout_seconds
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout_seconds,
            transport=transport,
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )

    async def send(self, call: Call) -> dict[str, Any] | None:
        """The API's JSON answer (None for 204); the deadline covers the retry too."""
        try:
            with anyio.fail_after(self.timeout_seconds):
                response = await self._send_with_retry(call)
        except (TimeoutError, httpx.TimeoutException, *_NOT_CONNECTED, *_DROPPED) as error:
            raise ApiUnavailable(f"{type(error).__name__} after up to {self.timeout_seconds:g} s") from error
        if response.status_code == 503:  # the API's own "retry shortly": its database is away
            raise ApiUnavailable(f"the API is unavailable: {_problem_of(response).get('detail', '')}")
        if response.status_code >= 400:
            raise ApiProblem(_problem_of(response))
        return response.json() if response.content else None

    async def _send_with_retry(self, call: Call) -> httpx.Response:
        headers = {"X-Session-Id": call.session_id}
        if call.authorization:
            headers["Authorization"] = call.authorization
        if key := call.idempotency_key():
            headers["Idempotency-Key"] = key
        try:
            return await self._http.request(call.method, call.path, json=call.body, headers=headers)
        except _DROPPED:
            if not call.repeatable:
                raise
        except _NOT_CONNECTED:
            pass
        return await self._http.request(call.method, call.path, json=call.body, headers=headers)

    async def aclose(self) -> None:
        await self._http.aclose()


def _problem_of(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "title" in body:
        return body
    return {
        "type": f"/problems/http-{response.status_code}",
        "title": response.reason_phrase,
        "status": response.status_code,
        "detail": response.text[:500],
    }
