"""`make load`: concurrent clients against the real service on loopback, mixing searches,
writes (some keyed, so they supersede each other) and manual revises for a fixed time; then
every write the service acknowledged is read back by id. A single client runs first, in the
same command, as the baseline the figures are compared with. `--fault` kills PostgreSQL's
postmaster (SIGKILL) a third of the way in and restarts it a few seconds later.

    python -m app.bench.load [--clients 16] [--seconds 30] [--baseline-seconds 10] [--fault]

Prints a table, writes JSON to bench-results/, and exits 1 if a write was lost or the
service answered a server error other than the 503 an outage is promised."""

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from app.bench.live import live_service
from app.bench.load_report import (
    TRANSPORT_ERROR,
    UNAVAILABLE,
    Acknowledged,
    Lost,
    Outage,
    Sample,
    failures,
    lost_writes,
    outage_summary,
    summarize,
    table,
    unexpected_client_errors,
)
from app.core.embedded import EmbeddedPostgres

# Clients share a few namespaces: writes to one namespace queue on its lock (by design), so
# several clients per namespace contend while the namespaces spread the load.
NAMESPACES = tuple(f"load:team-{number}" for number in range(4))
# Per hundred operations: mostly recall, a good share of writes (a third of them keyed), and
# corrections of what the client wrote itself.
MIX = {"search": 45, "write": 22, "write_keyed": 12, "batch": 6, "revise": 15}
BATCH_ITEMS = 3
# Longer than the service's statement timeout (15 s), so a slow request is answered, not abandoned.
REQUEST_TIMEOUT_SECONDS = 20.0
OUTAGE_SECONDS = 4.0
READ_BACK_TIMEOUT_SECONDS = 120.0
READ_BACK_CONCURRENCY = 16
# After the run: this many searches sent at once (the burst); at most 5% may answer 503.
BURST_SEARCHES = 200
BURST_MAX_UNAVAILABLE = 0.05
TRANSPORT_BACKOFF_SECONDS = 0.5
# A 503 without Retry-After: try again in a second.
DEFAULT_RETRY_AFTER_SECONDS = 1.0

PEOPLE = ("Maya", "Jonas", "Priya", "Tomás", "Aiko", "Lena", "Omar", "Grace", "Wei", "Nadia", "Felix", "Sofia")
# attribute (the key's last segment) -> how a sentence names it, the values it takes
FACTS = {
    "drink": ("usual drink", ("green tea", "black coffee", "an oat milk latte", "sparkling water", "chai")),
    "city": ("home city", ("Lyon", "Osaka", "Porto", "Montreal", "Nairobi", "Krakow", "Austin")),
    "editor": ("code editor", ("Vim", "VS Code", "Emacs", "Helix", "IntelliJ", "Zed")),
    "team": ("team", ("payments", "search", "mobile", "infrastructure", "growth", "data platform")),
    "commute": ("commute", ("by bike", "by train", "on foot", "by bus", "a short walk")),
    "diet": ("diet", ("vegetarian", "vegan", "pescatarian", "without restrictions", "gluten-free")),
}
PROJECTS = ("Atlas", "Beacon", "Cobalt", "Drift", "Ember", "Falcon", "Granite", "Harbor")
COMPONENTS = ("billing service", "login page", "search index", "mobile app", "nightly export", "CI pipeline")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
CUISINES = ("Thai", "Lebanese", "Ethiopian", "Peruvian", "Korean", "Sicilian")
EVENTS = (
    "{person} said the {project} release slipped to {weekday} because the {component} tests are flaky.",
    "{person} booked a table for {count} at the {cuisine} place near the office on {weekday}.",
    "In the {weekday} stand-up {person} asked for help moving the {component} to the new queue.",
    "{person} counted {count} failed deploys of {project} this week, all in the {component}.",
    "{person} wants code reviews for {project} before noon and avoids meetings on {weekday}.",
    "{person} finished the {project} design doc and wants feedback on the {component} section.",
)
QUESTIONS = (
    "What is {person}'s {phrase}?",
    "What did {person} say about {project}?",
    "Who had trouble with the {component}?",
    "plans for {weekday} {cuisine} dinner",
)


class Phrasebook:
    """Varied sentences about a small cast, so writes overlap (supersede, deduplicate,
    trigger revision) as an agent's memories would, and searches find them."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def _slots(self) -> dict[str, Any]:
        choice = self._rng.choice
        attribute = choice(list(FACTS))
        return {
            "person": choice(PEOPLE),
            "attribute": attribute,
            "phrase": FACTS[attribute][0],
            "value": choice(FACTS[attribute][1]),
            "project": choice(PROJECTS),
            "component": choice(COMPONENTS),
            "weekday": choice(WEEKDAYS),
            "cuisine": choice(CUISINES),
            "count": self._rng.randint(2, 12),
        }

    def event(self) -> str:
        return self._rng.choice(EVENTS).format(**self._slots())

    def fact(self, namespace: str) -> tuple[str, str]:
        """A keyed fact: (key, content); the same person and attribute share a key."""
        slots = self._slots()
        key = f"{namespace}:{slots['person'].lower()}:{slots['attribute']}"
        return key, "{person}'s {phrase} is {value}.".format(**slots)

    def question(self) -> str:
        return self._rng.choice(QUESTIONS).format(**self._slots())


@dataclass
class Run:
    """The shared record of one load run: every request's outcome and every acknowledgement."""

    http: httpx.AsyncClient
    seconds: float
    namespaces: tuple[str, ...] = NAMESPACES
    began: float = field(default_factory=time.perf_counter)
    samples: list[Sample] = field(default_factory=list)
    acknowledged: list[Acknowledged] = field(default_factory=list)
    rejected_items: Counter[int] = field(default_factory=Counter)

    def now(self) -> float:
        return time.perf_counter() - self.began

    def time_left(self) -> float:
        return self.seconds - self.now()

    async def call(self, operation: str, path: str, body: dict[str, Any]) -> httpx.Response | None:
        """POST and record the outcome; None when no HTTP answer came back."""
        started = self.now()
        try:
            response = await self.http.post(path, json=body)
        except httpx.TransportError:
            self.samples.append(Sample(operation, TRANSPORT_ERROR, started, self.now() - started))
            return None
        self.samples.append(Sample(operation, response.status_code, started, self.now() - started))
        return response

    def acknowledge(self, operation: str, memory: dict[str, Any], *, sent: str, deduplicated: bool) -> None:
        # A deduplicated write is acknowledged as the memory it repeats, whose wording may differ.
        content = memory["content"] if deduplicated else sent
        self.acknowledged.append(Acknowledged(memory["id"], memory["version"], content, operation))


def retry_delay(response: httpx.Response | None) -> float:
    """How long to wait before the next request: a 503 says (Retry-After), a lost connection
    gets a short pause, anything else none."""
    if response is None:
        return TRANSPORT_BACKOFF_SECONDS
    if response.status_code == UNAVAILABLE:
        return float(response.headers.get("Retry-After", DEFAULT_RETRY_AFTER_SECONDS))
    return 0.0


class Client:
    """One agent: loops over the mix until time is up, backing off when told to retry later."""

    def __init__(self, run: Run, number: int, seed: int) -> None:
        self._run = run
        self._rng = random.Random(seed)
        self._phrases = Phrasebook(self._rng)
        self._namespace = run.namespaces[number % len(run.namespaces)]
        self._revisable: dict[str, int] = {}  # memory id -> the version last acknowledged
        # Each operation returns how long the service asked it to wait before the next.
        self._operations: dict[str, Callable[[], Awaitable[float]]] = {
            "search": self._search,
            "write": self._write,
            "write_keyed": self._write_keyed,
            "batch": self._batch,
            "revise": self._revise,
        }

    async def loop(self) -> None:
        while self._run.time_left() > 0:
            operation = self._rng.choices(list(MIX), weights=list(MIX.values()))[0]
            delay = await self._operations[operation]()
            if delay:  # jitter keeps the clients from all coming back at once
                await asyncio.sleep(max(0.0, min(delay * self._rng.uniform(0.5, 1.0), self._run.time_left())))

    async def _search(self) -> float:
        body = {"namespace": self._rng.choice(self._run.namespaces), "query": self._phrases.question(), "top_k": 5}
        return retry_delay(await self._run.call("search", "/v1/memories/search", body))

    async def _store(self, operation: str, item: dict[str, Any]) -> float:
        response = await self._run.call(operation, "/v1/memories", item)
        if response is not None and response.status_code in (200, 201):
            self._remember(operation, item, response.json(), deduplicated=response.status_code == 200)
        return retry_delay(response)

    def _remember(self, operation: str, item: dict[str, Any], written: dict[str, Any], *, deduplicated: bool) -> None:
        memory = written["memory"]
        self._run.acknowledge(operation, memory, sent=item["content"], deduplicated=deduplicated)
        # Keyed memories are superseded by any client's next fact with that key, so only
        # keyless ones are worth correcting.
        if not deduplicated and "key" not in item:
            self._revisable[memory["id"]] = memory["version"]

    async def _write(self) -> float:
        return await self._store("write", {"namespace": self._namespace, "content": self._phrases.event()})

    async def _write_keyed(self) -> float:
        key, content = self._phrases.fact(self._namespace)
        return await self._store("write_keyed", {"namespace": self._namespace, "key": key, "content": content})

    def _batch_item(self) -> dict[str, Any]:
        if self._rng.random() < 0.5:
            key, content = self._phrases.fact(self._namespace)
            return {"namespace": self._namespace, "key": key, "content": content}
        return {"namespace": self._namespace, "content": self._phrases.event()}

    async def _batch(self) -> float:
        items = [self._batch_item() for _ in range(BATCH_ITEMS)]
        response = await self._run.call("batch", "/v1/memories:batch", {"items": items})
        if response is None or response.status_code != 200:
            return retry_delay(response)
        for item, result in zip(items, response.json()["results"], strict=True):
            if result["status"] in (200, 201):
                self._remember("batch", item, result, deduplicated=result["status"] == 200)
            else:  # every item is valid, and an outage answers 503 for the whole batch
                self._run.rejected_items[result["status"]] += 1
        return 0.0

    async def _revise(self) -> float:
        if not self._revisable:
            return await self._write()
        memory_id = self._rng.choice(list(self._revisable))
        content = f"Correction: {self._phrases.event()}"
        body = {"content": content, "expected_version": self._revisable[memory_id], "reason": "load test correction"}
        response = await self._run.call("revise", f"/v1/memories/{memory_id}/revise", body)
        if response is None or response.status_code == UNAVAILABLE:
            return retry_delay(response)
        if response.status_code == 200:
            memory = response.json()["memory"]
            self._run.acknowledge("revise", memory, sent=content, deduplicated=False)
            self._revisable[memory_id] = memory["version"]
        else:  # superseded or changed by someone else: no longer ours to correct
            del self._revisable[memory_id]
        return 0.0


async def _outage(run: Run, database: EmbeddedPostgres, *, at: float, seconds: float) -> Outage:
    """Kill the postmaster at `at` seconds, keep it down, restart it. The blocking calls run
    in a thread so the clients keep going throughout."""
    await asyncio.sleep(at)
    killed_at = run.now()
    await asyncio.to_thread(database.kill)
    down_at = run.now()
    await asyncio.sleep(seconds)
    restart_began = run.now()
    await asyncio.to_thread(database.restart)
    return Outage(killed_at=killed_at, down_at=down_at, restart_began=restart_began, restarted_at=run.now())


async def _fetch_detail(http: httpx.AsyncClient, memory_id: str, gate: asyncio.Semaphore) -> dict[str, Any] | None:
    """The memory's GET body, None if it does not exist; retried while the service is not answering."""
    async with gate:
        while True:
            try:
                response = await http.get(f"/v1/memories/{memory_id}")
            except httpx.TransportError:
                response = None
            if response is not None and response.status_code in (200, 404):
                return response.json() if response.status_code == 200 else None
            await asyncio.sleep(1)


async def read_back(http: httpx.AsyncClient, acknowledged: list[Acknowledged]) -> dict[str, dict[str, Any] | None]:
    gate = asyncio.Semaphore(READ_BACK_CONCURRENCY)
    ids = sorted({ack.memory_id for ack in acknowledged})
    async with asyncio.timeout(READ_BACK_TIMEOUT_SECONDS):
        details = await asyncio.gather(*(_fetch_detail(http, memory_id, gate) for memory_id in ids))
    return dict(zip(ids, details, strict=True))


async def _load(
    base_url: str, database: EmbeddedPostgres, *, clients: int, seconds: float, baseline_seconds: float, fault: bool
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients + READ_BACK_CONCURRENCY)
    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT_SECONDS, limits=limits) as http:
        # One client first, on the same service and machine: the figures below are read against it.
        baseline = Run(http=http, seconds=baseline_seconds)
        await Client(baseline, 0, seed=clients).loop()
        run = Run(http=http, seconds=seconds)
        outage_task = asyncio.create_task(_outage(run, database, at=seconds / 3, seconds=OUTAGE_SECONDS)) if fault else None
        await asyncio.gather(*(Client(run, number, seed=number).loop() for number in range(clients)))
        elapsed = run.now()
        outage = await outage_task if outage_task is not None else None
        try:
            details = await read_back(http, baseline.acknowledged + run.acknowledged)
        except TimeoutError:
            details = None
    results = _results(run, baseline, elapsed=elapsed, outage=outage, details=details, fault=fault)
    if not fault:
        results["burst"] = burst = await search_burst(base_url, BURST_SEARCHES)
        if burst["other"]:
            results["failures"].append(f"{burst['other']} of {BURST_SEARCHES} concurrent searches failed otherwise than 503")
        if burst["unavailable_503"] > BURST_MAX_UNAVAILABLE * BURST_SEARCHES:
            results["failures"].append(f"{burst['unavailable_503']} of {BURST_SEARCHES} concurrent searches answered 503")
    return results


async def search_burst(base_url: str, count: int) -> dict[str, Any]:
    """`count` distinct searches sent at once (none answered from the cache): how many were
    answered, how many 503, and the slowest."""
    questions = Phrasebook(random.Random(count))
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT_SECONDS * 3, limits=limits) as http:

        async def one(number: int) -> tuple[int | None, float]:
            began = time.perf_counter()
            body = {"query": f"{questions.question()} ({number})", "namespace": NAMESPACES[number % len(NAMESPACES)]}
            try:
                response = await http.post("/v1/memories/search", json=body)
            except httpx.TransportError:
                return None, time.perf_counter() - began
            return response.status_code, time.perf_counter() - began

        answers = await asyncio.gather(*(one(number) for number in range(count)))
    statuses = Counter(status for status, _ in answers)
    return {
        "searches": count,
        "ok": statuses[200],
        "unavailable_503": statuses[503],
        "other": count - statuses[200] - statuses[503],
        "slowest_seconds": round(max(seconds for _, seconds in answers), 2),
    }


def _ratio(loaded: float, single: float) -> float | None:
    return round(loaded / single, 2) if single else None


def _results(
    run: Run,
    baseline: Run,
    *,
    elapsed: float,
    outage: Outage | None,
    details: dict[str, dict[str, Any] | None] | None,
    fault: bool,
) -> dict[str, Any]:
    summary = summarize(run.samples, seconds=elapsed, acknowledged=len(run.acknowledged))
    single = summarize(baseline.samples, seconds=baseline.seconds, acknowledged=len(baseline.acknowledged))
    acknowledged = baseline.acknowledged + run.acknowledged
    lost: list[Lost] = lost_writes(acknowledged, details) if details is not None else []
    unexpected = unexpected_client_errors(baseline.samples + run.samples)
    rejected_items = baseline.rejected_items + run.rejected_items
    outage_figures = outage_summary(run.samples, outage) if outage is not None else None
    reasons = failures(
        summary,
        fault=fault,
        lost=len(lost),
        unexpected=sum(unexpected.values()) + sum(rejected_items.values()),
        outage=outage_figures,
    )
    if single["other_5xx"] or single["unavailable_503"]:
        reasons.append("the single-client baseline got server errors")
    if details is None:
        reasons.append(f"read-back did not finish within {READ_BACK_TIMEOUT_SECONDS:g} s")
    return {
        **summary,
        "single_client": {name: single[name] for name in ("seconds", "requests", "requests_per_second", "latency_ms")},
        "vs_single_client": {
            "requests_per_second": _ratio(summary["requests_per_second"], single["requests_per_second"]),
            **{name: _ratio(summary["latency_ms"][name], single["latency_ms"][name]) for name in ("p50", "p95", "p99")},
        },
        "unexpected_4xx": {f"{operation} {status}": count for (operation, status), count in unexpected.items()},
        "rejected_batch_items": {str(status): count for status, count in rejected_items.items()},
        "outage": outage_figures,
        "read_back": {
            "acknowledged": len(acknowledged),
            "memories": len({ack.memory_id for ack in acknowledged}),
            "completed": details is not None,
            "lost": len(lost),
            "lost_examples": [{"reason": item.reason, **vars(item.acknowledged)} for item in lost[:20]],
        },
        "failures": reasons,
    }


def _report(results: dict[str, Any]) -> str:
    read_back = results["read_back"]
    single, ratios = results["single_client"], results["vs_single_client"]
    lines = [
        table(results),
        f"against 1 client in the same command ({single['requests_per_second']} req/s, p50 "
        f"{single['latency_ms']['p50']} ms, p95 {single['latency_ms']['p95']} ms): throughput "
        f"{ratios['requests_per_second']}x, p50 {ratios['p50']}x, p95 {ratios['p95']}x",
        f"5xx: {results['unavailable_503']} answered 503, {results['other_5xx']} other; "
        f"{results['transport_errors']} transport errors; batch items refused: {results['rejected_batch_items'] or 'none'}",
        f"read-back: {read_back['acknowledged']} acknowledged writes on {read_back['memories']} memories, "
        f"{read_back['lost']} lost" + ("" if read_back["completed"] else " (incomplete)"),
    ]
    if outage := results["outage"]:
        lines.append(
            f"outage: database killed at {outage['killed_at_second']} s, down {outage['database_down_seconds']} s, "
            f"restart took {outage['restart_seconds']} s; {outage['unavailable_503_during_outage']} of "
            f"{outage['requests_during_outage']} requests meanwhile answered 503 (the slowest in "
            f"{outage['unavailable_503_max_ms']} ms); first success "
            f"{outage['first_success_after_restart_seconds']} s after the restart "
            f"({outage['service_unavailable_seconds']} s after the kill)"
        )
    if burst := results.get("burst"):
        lines.append(
            f"{burst['searches']} searches at once: {burst['ok']} answered, {burst['unavailable_503']} answered 503 "
            f"({100 * burst['unavailable_503'] / burst['searches']:.1f}%), {burst['other']} other, the slowest in "
            f"{burst['slowest_seconds']} s"
        )
    lines.append("FAILED: " + "; ".join(results["failures"]) if results["failures"] else "PASSED")
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.bench.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the clients send requests")
    parser.add_argument("--baseline-seconds", type=float, default=10.0, help="one client first, for comparison")
    parser.add_argument("--fault", action="store_true", help="kill PostgreSQL a third of the way in, then restart it")
    parser.add_argument(
        "--workers", type=int, default=1, help="N > 1: the same load against 1 API process, then N on one database"
    )
    parser.add_argument("--out", type=Path, default=None, help="default: bench-results/load.json (load-fault.json)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.clients < 1 or args.seconds <= 0 or args.baseline_seconds <= 0:
        parser.error("--clients must be at least 1, --seconds and --baseline-seconds positive")
    if args.fault and args.seconds < 3 * OUTAGE_SECONDS:
        parser.error(f"--fault needs --seconds of at least {3 * OUTAGE_SECONDS:g} to fit the outage")
    return args


def _run_against(args: argparse.Namespace, *, workers: int) -> dict[str, Any]:
    with live_service(workers=workers) as service:
        outage = ", with an outage" if args.fault else ""
        print(
            f"1 client for {args.baseline_seconds:g} s, then {args.clients} for {args.seconds:g} s "
            f"against {service.base_url} ({workers} API process{'es' if workers > 1 else ''}){outage}"
        )
        results = asyncio.run(
            _load(
                service.base_url,
                service.database,
                clients=args.clients,
                seconds=args.seconds,
                baseline_seconds=args.baseline_seconds,
                fault=args.fault,
            )
        )
        print(_report(results))
        if results["other_5xx"]:
            print(f"service log: {service.log_path}")
    return results


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    out = args.out or Path("bench-results") / ("load-fault.json" if args.fault else "load.json")
    results = _run_against(args, workers=1)
    if args.workers > 1:
        # The same load against N processes sharing one database, read against one process.
        several = _run_against(args, workers=args.workers)
        ratio = _ratio(several["requests_per_second"], results["requests_per_second"])
        print(f"{args.workers} API processes against 1: throughput {ratio}x")
        results = {**several, "one_process": results, "workers": args.workers, "vs_one_process": {"requests_per_second": ratio}}
        results["failures"] = several["failures"] + [f"with 1 process: {reason}" for reason in results["one_process"]["failures"]]
    results["config"] = {
        "clients": args.clients,
        "seconds": args.seconds,
        "baseline_seconds": args.baseline_seconds,
        "fault": args.fault,
        "workers": args.workers,
        "mix": MIX,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results in {out}")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
