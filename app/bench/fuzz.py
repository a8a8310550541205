"""`make fuzz`: schemathesis against the OpenAPI schema of the real service, on loopback and
on a fresh database of its own, with an API key configured so the auth checks mean something.

    python -m app.bench.fuzz [--max-examples 50] [--scenarios 300] [--seed 7] [--workers 1]

Two passes. The first sends valid and invalid input (NUL characters included) and checks that
nothing answers 5xx, that status codes, content types, headers and bodies are the documented
ones, that invalid input, a missing or wrong API key and undocumented methods are refused, and
that created resources can be read back; its stateful phase then follows the schema's links
(a written memory's id and version into a revise, a revise's revision into a rollback, ...) to
reach what random ids never find. The second sends valid input only and checks it is accepted.
Prints a summary and exits non-zero on any failure, any schemathesis error, or any unhandled
exception in the service's log."""

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from app.bench.live import live_service

# The key exists only inside the throwaway service this run starts.
API_KEY = "fuzz-admin-key"
SERVICE_ENV = {
    "HINDSIGHT_API_KEYS": json.dumps({API_KEY: ["*"]}),
    # The rule judge is never less sure than 0.7, the default threshold, so no judgement would
    # wait for review and apply and dismiss would only ever see revisions already decided.
    "HINDSIGHT_REVISION_CONFIDENCE_THRESHOLD": "0.85",
}
# Steps per stateful scenario: enough for write, read, revise, roll back, revise again.
STATEFUL_STEPS = 10
CONFORMANCE = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
)


@dataclass(frozen=True)
class Pass:
    name: str
    checks: tuple[str, ...]
    options: tuple[str, ...]
    # Operation label -> checks it is spared; the command line can only select checks for all.
    exempt: dict[str, tuple[str, ...]] = field(default_factory=dict)


PASSES = (
    Pass(
        "all-inputs",
        checks=(
            *CONFORMANCE,
            "negative_data_rejection",
            "missing_required_header",
            "ignored_auth",
            "unsupported_method",
            "allow_header_conformance",
            # Not use_after_free: DELETE /v1/memories/{id} is a soft delete by design, and the
            # memory stays readable by id (status "deleted", with its history).
            "ensure_resource_availability",
        ),
        options=(
            "--mode", "all",
            "--generation-allow-x00", "true",
            "--phases", "examples,coverage,fuzzing,stateful",
        ),
    ),
    # Valid input is refused (422) where the schema cannot say why, so those cases are not held
    # to acceptance: NUL, which JSON Schema strings allow and PostgreSQL cannot store, the
    # operations with cross-field rules, a key inside the memory's own namespace (POST
    # /v1/memories), created_after not later than created_before (search), a conversation's
    # unique message ids and `extract: llm` only with an LLM configured, and those with times that
    # may not lie in the future (an event's `at`, a lesson's `occurred_at`, a message's `at`; JSON
    # Schema has no "now"), and a namespace import (any bytes are a schema-valid body; an export
    # is a format of its own). The first pass checks them all; here the operations still run, and
    # the memories they write give the operations addressed by a memory's id something to find.
    Pass(
        "valid-inputs-accepted",
        checks=(*CONFORMANCE, "positive_data_acceptance"),
        options=(
            "--mode", "positive",
            "--generation-allow-x00", "false",
            "--phases", "examples,coverage,fuzzing",
        ),
        exempt={
            "POST /v1/memories": ("positive_data_acceptance",),
            "POST /v1/memories/search": ("positive_data_acceptance",),
            "POST /v1/events": ("positive_data_acceptance",),
            "POST /v1/reflections": ("positive_data_acceptance",),
            "POST /v1/conversations": ("positive_data_acceptance",),
            "POST /v1/namespaces/{namespace}/import": ("positive_data_acceptance",),
        },
    ),
)  # fmt: skip
# What the service logs for an exception no handler turned into a problem.
UNHANDLED_LOG_MESSAGES = ("unhandled error", "Exception in ASGI application")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.bench.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=50, help="generated test cases per operation and phase")
    parser.add_argument("--scenarios", type=int, default=300, help="stateful scenarios (chains of linked calls)")
    parser.add_argument("--seed", type=int, default=7, help="the same seed generates the same requests")
    # One worker: hypothesis parses lambdas' source with ast.parse, which CPython 3.11 before
    # 3.11.8 cannot run on two threads at once (gh-106905, a spurious SystemError).
    parser.add_argument("--workers", type=int, default=1)
    return parser.parse_args(argv)


def _config(fuzz: Pass, args: argparse.Namespace) -> str:
    """schemathesis.toml for what the command line cannot say: the checks (so an operation can be
    spared one; a check named on the command line overrides that) and the stateful budget."""
    lines = ["[checks]", "enabled = false", *(f"{check}.enabled = true" for check in fuzz.checks)]
    lines += ["", "[phases.stateful]", f"max-steps = {STATEFUL_STEPS}"]
    lines += ["", "[phases.stateful.generation]", f"max-examples = {args.scenarios}"]
    for operation, checks in fuzz.exempt.items():
        lines += ["", "[[operations]]", f"include-name = {json.dumps(operation)}"]
        lines += [f"checks.{check}.enabled = false" for check in checks]
    return "\n".join(lines) + "\n"


def _schemathesis(base_url: str, fuzz: Pass, args: argparse.Namespace, workdir: Path) -> int:
    """Run the schemathesis CLI (its stable interface) from this venv; its own report goes to
    stdout. It runs in a scratch directory: the failures it caches there would otherwise be
    replayed by the next run, which then no longer depends on the seed alone."""
    config = workdir / "schemathesis.toml"
    config.write_text(_config(fuzz, args))
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file", str(config),
        "run",
        f"{base_url}/openapi.json",
        *fuzz.options,
        "--max-examples", str(args.max_examples),
        "--seed", str(args.seed),
        "--workers", str(args.workers),
        "--header", f"Authorization: Bearer {API_KEY}",
        "--request-timeout", "30",
        "--generation-database", "none",
        "--report", "json",
        "--report-dir", str(workdir),
        "--no-color",
    ]  # fmt: skip
    print(f"\n=== pass {fuzz.name} ===", flush=True)
    return subprocess.run(command, cwd=workdir).returncode


def _requests_by_status_class(base_url: str) -> Counter[str]:
    """What the service itself counted, from its request histogram: an account independent of schemathesis."""
    served: Counter[str] = Counter()
    for family in text_string_to_metric_families(httpx.get(f"{base_url}/metrics").text):
        for sample in family.samples:
            if sample.name == "hindsight_request_duration_seconds_count":
                served[f"{sample.labels['status'][0]}xx"] += int(sample.value)
    return served


def _unhandled_errors(log_path: Path) -> list[str]:
    """The last line of each traceback the service logged: the exception and its message."""
    found = []
    for line in log_path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("message") in UNHANDLED_LOG_MESSAGES:
            found.append(record.get("exception", record["message"]).strip().splitlines()[-1])
    return found


def _pass_summary(name: str, report: dict[str, Any]) -> list[str]:
    operations, cases = report["operations"], report["test_cases"]
    failures = sum(failure["count"] for failure in report["failures"])
    errors = sum(error["count"] for error in report["errors"])
    lines = [
        f"{name:<22} operations {operations['tested']}/{operations['total']}, test cases {cases['generated']}, "
        f"failures {failures}, errors {errors}"
    ]
    lines += [f"  {failure['code']} {failure['title']}: {failure['count']}" for failure in report["failures"]]
    lines += [f"  error: {error['title']}: {error['count']}" for error in report["errors"]]
    # Operations that kept answering 404: their success paths went untested.
    lines += [f"  no test data (404s): {operation}" for operation in report["warnings"]["missing_test_data"]]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    workdir = Path(tempfile.mkdtemp(prefix="hindsight-fuzz-"))
    exit_codes = []
    with live_service(SERVICE_ENV) as live:
        for fuzz in PASSES:
            (workdir / fuzz.name).mkdir()
            exit_codes.append(_schemathesis(live.base_url, fuzz, args, workdir / fuzz.name))
        served = _requests_by_status_class(live.base_url)
        unhandled = _unhandled_errors(live.log_path)
    lines = [
        f"\nhindsight fuzz (seed {args.seed}, at most {args.max_examples} examples per operation and phase, "
        f"at most {args.scenarios} stateful scenarios)"
    ]
    for fuzz in PASSES:
        lines += _pass_summary(fuzz.name, json.loads(next((workdir / fuzz.name).glob("*.json")).read_text()))
    lines.append(
        f"requests served        {sum(served.values())} ("
        + ", ".join(f"{status} {count}" for status, count in sorted(served.items()))
        + ")"
    )
    lines.append(f"unhandled in log       {len(unhandled)}")
    lines += [f"  {message}: {count}" for message, count in Counter(unhandled).items()]
    print("\n".join(lines))
    return 1 if any(exit_codes) or unhandled else 0


if __name__ == "__main__":
    sys.exit(main())
