"""`make load`'s parts: the figures it reports, the rule that finds lost writes, when a run
fails, and a short real run of its clients against the app."""

import asyncio
import math
import random

import httpx

from app.bench.load import Client, Phrasebook, Run, read_back, retry_delay
from app.bench.load_report import (
    EXPECTED_STATUSES,
    TRANSPORT_ERROR,
    Acknowledged,
    Outage,
    Sample,
    failures,
    lost_writes,
    outage_summary,
    percentile,
    summarize,
)
from app.memories.schemas import MemoryWrite
from app.memories.sensitive import refuse_sensitive


def test_percentile_is_the_nearest_rank():
    values = [float(value) for value in range(100, 0, -1)]  # unsorted on purpose
    assert [percentile(values, fraction) for fraction in (0.50, 0.95, 0.99, 1.0)] == [50, 95, 99, 100]
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([1.0, 2.0], 0.5) == 1.0
    assert math.isnan(percentile([], 0.5))


def test_summary_times_only_answered_requests_and_counts_every_failure():
    samples = [
        *(Sample("search", 200, started=0, seconds=0.010) for _ in range(18)),
        Sample("search", 200, started=0, seconds=0.100),
        Sample("write", 201, started=0, seconds=0.200),
        Sample("revise", 409, started=0, seconds=0.020),
        Sample("write", 503, started=0, seconds=9.0),  # not timed: it was not served
        Sample("write", 500, started=0, seconds=9.0),
        Sample("search", TRANSPORT_ERROR, started=0, seconds=9.0),
    ]
    summary = summarize(samples, seconds=2.0, acknowledged=3)
    assert summary["requests"] == 24 and summary["requests_per_second"] == 12.0
    assert summary["writes_per_second"] == 1.5
    assert summary["latency_ms"] == {"p50": 10.0, "p95": 100.0, "p99": 200.0}
    assert (summary["unavailable_503"], summary["other_5xx"], summary["transport_errors"]) == (1, 1, 1)
    assert summary["operations"]["write"]["statuses"] == {"201": 1, "500": 1, "503": 1}
    assert summary["operations"]["write"]["answered"] == 1


def _detail(*versions: tuple[int, str]) -> dict:
    return {"memory": {"content": versions[-1][1]}, "versions": [{"version": v, "content": c} for v, c in versions]}


def test_an_acknowledged_write_is_kept_in_its_version_history_however_it_changed_later():
    written = Acknowledged("m1", 1, "Maya drinks tea.", "write")
    revised = Acknowledged("m1", 3, "Correction: Maya drinks coffee.", "revise")
    # Version 2 superseded the memory (same content), version 3 revised it.
    details = {"m1": _detail((1, "Maya drinks tea."), (2, "Maya drinks tea."), (3, "Correction: Maya drinks coffee."))}
    assert lost_writes([written, revised], details) == []


def test_a_write_is_lost_when_missing_or_its_version_holds_other_content():
    details = {"kept": _detail((1, "Omar cycles.")), "gone": None}
    acknowledged = [
        Acknowledged("gone", 1, "Lena moved to Porto.", "write"),
        Acknowledged("never-read", 1, "Wei uses Vim.", "write"),
        Acknowledged("kept", 2, "Omar takes the train.", "revise"),
        Acknowledged("kept", 1, "Omar takes the bus.", "write"),
    ]
    assert [(lost.acknowledged.memory_id, lost.reason) for lost in lost_writes(acknowledged, details)] == [
        ("gone", "not found"),
        ("never-read", "not found"),
        ("kept", "no version 2"),
        ("kept", "version 1 holds other content"),
    ]


def test_only_a_fault_run_tolerates_503_and_no_run_tolerates_other_server_errors():
    clean = {"other_5xx": 0, "unavailable_503": 0}
    outage = {"unavailable_503": 40, "other_5xx": 0}
    recovered = {"first_success_after_restart_seconds": 0.1}
    assert failures(clean, fault=False, lost=0, unexpected=0, outage=None) == []
    assert failures(outage, fault=True, lost=0, unexpected=0, outage=recovered) == []
    assert failures(outage, fault=False, lost=0, unexpected=0, outage=None) == ["40 answers 503 without an outage"]
    assert failures({**outage, "other_5xx": 2}, fault=True, lost=0, unexpected=0, outage=recovered) == [
        "2 server errors other than 503"
    ]
    assert failures(clean, fault=False, lost=1, unexpected=3, outage=None) == [
        "1 acknowledged writes lost",
        "3 unexpected 4xx answers",
    ]
    never_recovered = {"first_success_after_restart_seconds": None}
    assert failures(outage, fault=True, lost=0, unexpected=0, outage=never_recovered) == [
        "no request succeeded after the database came back"
    ]


def test_recovery_counts_from_requests_begun_after_the_kill():
    outage = Outage(killed_at=10.0, down_at=10.5, restart_began=14.5, restarted_at=15.0)
    samples = [
        Sample("search", 200, started=9.0, seconds=0.5),  # before: not in the window
        Sample("search", 503, started=9.9, seconds=0.3),  # in flight at the kill
        Sample("write", 201, started=10.2, seconds=0.1),  # begun before the postmaster died
        Sample("search", 503, started=11.0, seconds=0.01),
        Sample("batch", 503, started=12.0, seconds=0.05),
        Sample("write", 503, started=14.0, seconds=0.01),
        Sample("search", 200, started=15.0, seconds=0.2),  # the first success
        Sample("search", 200, started=15.3, seconds=0.05),  # after recovery
    ]
    summary = outage_summary(samples, outage)
    assert summary["first_success_after_restart_seconds"] == 0.2
    assert summary["service_unavailable_seconds"] == 5.2
    assert summary["database_down_seconds"] == 4.5
    assert summary["requests_during_outage"] == 6
    assert summary["unavailable_503_during_outage"] == 4
    assert summary["unavailable_503_max_ms"] == 300.0


def test_clients_back_off_as_told():
    assert retry_delay(httpx.Response(503, headers={"Retry-After": "2"})) == 2.0
    assert retry_delay(httpx.Response(503)) == 1.0
    assert retry_delay(None) > 0
    assert retry_delay(httpx.Response(409)) == 0.0


def test_generated_requests_are_valid_writes_and_keyed_facts_share_keys():
    phrases = Phrasebook(random.Random(1))
    namespace = "load:team-0"
    facts = [phrases.fact(namespace) for _ in range(300)]
    for key, content in facts:
        MemoryWrite(namespace=namespace, key=key, content=content)
        refuse_sensitive(content)
    for _ in range(100):
        refuse_sensitive(phrases.event())
    assert len({key for key, _ in facts}) < len(facts) / 3  # keys repeat, so keyed writes supersede


async def test_a_short_run_acknowledges_writes_and_reads_every_one_back(live_client, live_namespace):
    run = Run(http=live_client, seconds=2.0, namespaces=(live_namespace,))
    await asyncio.gather(*(Client(run, number, seed=number).loop() for number in range(3)))
    assert run.samples and run.acknowledged
    assert all(sample.status in EXPECTED_STATUSES[sample.operation] for sample in run.samples)
    assert not run.rejected_items
    details = await read_back(live_client, run.acknowledged)
    assert lost_writes(run.acknowledged, details) == []
    # The checker would notice a write the service did not keep.
    forged = Acknowledged(run.acknowledged[0].memory_id, 1, "Never written.", "write")
    assert len(lost_writes([forged], details)) == 1
