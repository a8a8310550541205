"""What `make load` measured and whether it passed: latency percentiles, status counts, the
outage timeline, and the rule that decides whether an acknowledged write was lost."""

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

# Recorded as the status of a request that got no HTTP response (refused, reset, timed out).
TRANSPORT_ERROR = 0
UNAVAILABLE = 503

# The answers each operation can legitimately get; anything else below 500 means the load
# generator or the API contract is wrong. A revise is refused (409) when another writer
# superseded or revised the memory first, which concurrent keyed writes do by design.
EXPECTED_STATUSES = {
    "search": {200},
    "write": {200, 201},
    "write_keyed": {200, 201},
    "batch": {200},
    "revise": {200, 409},
}


@dataclass(frozen=True, slots=True)
class Sample:
    operation: str
    status: int
    started: float  # seconds since the run began
    seconds: float

    @property
    def finished(self) -> float:
        return self.started + self.seconds

    @property
    def answered(self) -> bool:
        """Served: an HTTP answer that is not a server error."""
        return TRANSPORT_ERROR < self.status < 500


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """What the service said it stored: this memory holds this content at this version."""

    memory_id: str
    version: int
    content: str
    operation: str


@dataclass(frozen=True, slots=True)
class Lost:
    acknowledged: Acknowledged
    reason: str


@dataclass(frozen=True, slots=True)
class Outage:
    """When the database went down and came back, in seconds since the run began."""

    killed_at: float  # SIGKILL sent
    down_at: float  # the postmaster and its backends have exited
    restart_began: float
    restarted_at: float  # the server accepts connections again


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `fraction` of the values at or below it."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def latency_ms(samples: list[Sample]) -> dict[str, float]:
    seconds = [sample.seconds for sample in samples if sample.answered]
    return {
        name: round(percentile(seconds, fraction) * 1000, 1)
        for name, fraction in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
    }


def _by_status(statuses: Counter[int]) -> dict[str, int]:
    return {str(status): count for status, count in sorted(statuses.items())}


def _operation_summary(samples: list[Sample]) -> dict[str, Any]:
    statuses = Counter(sample.status for sample in samples)
    return {
        "requests": len(samples),
        "answered": sum(sample.answered for sample in samples),
        "latency_ms": latency_ms(samples),
        "statuses": _by_status(statuses),
    }


def summarize(samples: list[Sample], *, seconds: float, acknowledged: int) -> dict[str, Any]:
    """Throughput, latency of the answered requests, and every status seen, overall and per operation."""
    by_operation: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_operation[sample.operation].append(sample)
    statuses = Counter(sample.status for sample in samples)
    return {
        "seconds": round(seconds, 2),
        "requests": len(samples),
        "requests_per_second": round(len(samples) / seconds, 1),
        "acknowledged_writes": acknowledged,
        "writes_per_second": round(acknowledged / seconds, 1),
        "latency_ms": latency_ms(samples),
        "statuses": _by_status(statuses),
        "unavailable_503": statuses[UNAVAILABLE],
        "other_5xx": sum(count for status, count in statuses.items() if status >= 500 and status != UNAVAILABLE),
        "transport_errors": statuses[TRANSPORT_ERROR],
        "operations": {operation: _operation_summary(group) for operation, group in sorted(by_operation.items())},
    }


def unexpected_client_errors(samples: list[Sample]) -> Counter[tuple[str, int]]:
    """4xx answers an operation should never get."""
    return Counter(
        (sample.operation, sample.status)
        for sample in samples
        if 400 <= sample.status < 500 and sample.status not in EXPECTED_STATUSES[sample.operation]
    )


def outage_summary(samples: list[Sample], outage: Outage) -> dict[str, Any]:
    """How the service behaved while the database was down, and how soon it served again.

    Recovery is the first success of a request begun once the postmaster was dead (one begun
    earlier may have finished on a live connection).
    """
    first_success = min(
        (
            sample.finished
            for sample in samples
            if sample.started >= outage.down_at and 200 <= sample.status < 300
        ),
        default=None,
    )
    window_end = first_success if first_success is not None else math.inf
    during = [sample for sample in samples if sample.finished >= outage.killed_at and sample.started < window_end]
    refused_seconds = [sample.seconds for sample in during if sample.status == UNAVAILABLE]
    return {
        "killed_at_second": round(outage.killed_at, 2),
        "database_down_seconds": round(outage.restart_began - outage.killed_at, 2),
        "restart_seconds": round(outage.restarted_at - outage.restart_began, 2),
        "requests_during_outage": len(during),
        "unavailable_503_during_outage": len(refused_seconds),
        # How fast a 503 came: the promise is "at once", not after a hang.
        "unavailable_503_max_ms": round(max(refused_seconds, default=math.nan) * 1000, 1),
        "service_unavailable_seconds": None if first_success is None else round(first_success - outage.killed_at, 2),
        # Can be slightly negative: the server accepts connections before its start command returns.
        "first_success_after_restart_seconds": None if first_success is None else round(first_success - outage.restarted_at, 2),
    }


def lost_writes(acknowledged: list[Acknowledged], details: dict[str, dict[str, Any] | None]) -> list[Lost]:
    """Every acknowledgement the service gave must still be true of its history.

    A memory's content changes only by a revise, and every change (a revise, a supersede by a
    keyed write or a judge, a status change) adds a version row holding the memory as it was
    then, so the content current at each version number is kept for good. An acknowledgement
    (id, version, content) therefore holds exactly when GET /v1/memories/{id} finds the memory
    and its version row with that number holds that content, however the memory was
    superseded or revised afterwards. `details` maps ids to GET bodies, None for a 404.
    """
    lost = []
    for ack in acknowledged:
        detail = details.get(ack.memory_id)
        if detail is None:
            lost.append(Lost(ack, "not found"))
            continue
        kept = {version["version"]: version["content"] for version in detail["versions"]}
        if ack.version not in kept:
            lost.append(Lost(ack, f"no version {ack.version}"))
        elif kept[ack.version] != ack.content:
            lost.append(Lost(ack, f"version {ack.version} holds other content"))
    return lost


def failures(summary: dict[str, Any], *, fault: bool, lost: int, unexpected: int, outage: dict[str, Any] | None) -> list[str]:
    """Why the run failed; empty when it passed. A 503 is the promised answer during an
    outage, so only the fault run tolerates it; no run tolerates any other server error."""
    reasons = []
    if lost:
        reasons.append(f"{lost} acknowledged writes lost")
    if summary["other_5xx"]:
        reasons.append(f"{summary['other_5xx']} server errors other than 503")
    if summary["unavailable_503"] and not fault:
        reasons.append(f"{summary['unavailable_503']} answers 503 without an outage")
    if unexpected:
        reasons.append(f"{unexpected} unexpected 4xx answers")
    if outage is not None and outage["first_success_after_restart_seconds"] is None:
        reasons.append("no request succeeded after the database came back")
    return reasons


def table(summary: dict[str, Any]) -> str:
    lines = [
        f"{summary['requests']} requests in {summary['seconds']:.1f} s: {summary['requests_per_second']} req/s, "
        f"{summary['writes_per_second']} acknowledged writes/s ({summary['acknowledged_writes']})",
        "latency of answered requests (2xx-4xx), ms",
        f"| {'operation':<12} | {'requests':>8} | {'p50':>7} | {'p95':>7} | {'p99':>7} | statuses |",
        f"|{'-' * 14}|{'-' * 10}|{'-' * 9}|{'-' * 9}|{'-' * 9}|----------|",
    ]
    rows = [*summary["operations"].items(), ("all", summary)]
    for operation, figures in rows:
        percentiles = " | ".join(f"{figures['latency_ms'][name]:>7}" for name in ("p50", "p95", "p99"))
        statuses = " ".join(f"{_status_name(status)}:{count}" for status, count in figures["statuses"].items())
        lines.append(f"| {operation:<12} | {figures['requests']:>8} | {percentiles} | {statuses} |")
    return "\n".join(lines)


def _status_name(status: str) -> str:
    return "transport" if int(status) == TRANSPORT_ERROR else status
