"""Prometheus metrics, defined once per process (the default registry) and served at /metrics."""

import time
from collections.abc import AsyncIterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUEST_SECONDS = Histogram(
    "hindsight_request_duration_seconds", "Request latency by route template.", ["route", "method", "status"]
)
WRITES = Counter("hindsight_memory_writes_total", "Memories written, new or deduplicated.", ["outcome"])
SEARCHES = Counter("hindsight_searches_total", "Memory searches answered.")
REVISIONS = Counter("hindsight_revisions_total", "Revisions logged, by trigger and decision.", ["trigger", "decision"])
JUDGE_FALLBACKS = Counter(
    "hindsight_judge_fallbacks_total", "Judgements the rule judge made because the LLM gave no usable answer."
)
WRITE_RATE_FLAGS = Counter("hindsight_write_rate_flags_total", "Sessions flagged for writing faster than the threshold.")
REPLICA_READS = Counter(
    "hindsight_search_reads_total", "Searches by where they read: the replica, or the primary it had not caught up with.", ["served_by"]
)
ADMISSION_WAIT_SECONDS = Histogram(
    "hindsight_admission_wait_seconds", "Time requests waited for a database slot, by lane.", ["lane"]
)
ADMISSION_REFUSED = Counter("hindsight_admission_refused_total", "Requests answered 503 after waiting too long for a slot.", ["lane"])
IDEMPOTENT_REPLAYS = Counter("hindsight_idempotent_replays_total", "Requests answered with the stored answer to their Idempotency-Key.")
EMBEDDING_SECONDS = Histogram("hindsight_embedding_duration_seconds", "Embedding calls, passages or query.", ["kind"])
# The MCP gateway is its own process and serves only its own series.
GATEWAY_REGISTRY = CollectorRegistry()
GATEWAY_DEGRADED = Counter(
    "hindsight_gateway_degraded_calls_total",
    "Gateway tool calls answered degraded: the API did not answer, or answered 503.",
    ["tool"],
    registry=GATEWAY_REGISTRY,
)
# The methods HTTP defines; any other a client makes up is counted as "other", so clients cannot
# mint series (a label per made-up method grew /metrics without bound).
_KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
QUEUE_DEPTH = Gauge("hindsight_revision_queue_depth", "Deferred revisions waiting for a worker (read at scrape time).")


def count_revision(*, trigger: str, decision: str | None, fell_back: bool) -> None:
    REVISIONS.labels(trigger=trigger, decision=decision or "none").inc()
    if fell_back:
        JUDGE_FALLBACKS.inc()


async def count_search() -> AsyncIterator[None]:
    """A router dependency: counts a search once its handler has answered without error."""
    yield
    SEARCHES.inc()


class RequestMetricsMiddleware:
    """Times every HTTP request under its route template, so ids in paths never become labels."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets when the app raises before answering

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            route = getattr(scope.get("route"), "path_format", "unmatched")  # {memory_id}, not its converter
            method = scope["method"] if scope["method"] in _KNOWN_METHODS else "other"
            REQUEST_SECONDS.labels(route=route, method=method, status=str(status)).observe(
                time.perf_counter() - started
            )
