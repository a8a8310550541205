"""One log format for every process: JSON by default, plain text for all with HINDSIGHT_LOG_FORMAT=plain."""

import json
import os
import signal
import subprocess
import sys

from tests.gateway.conftest import free_port
from tests.ops.test_run import ROOT, _answers, wait_until


def log_lines(command: list[str], env: dict[str, str], *, serves: str | None = None) -> list[str]:
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    if serves:
        wait_until(lambda: _answers(serves), seconds=60, what="the gateway did not answer")
        process.send_signal(signal.SIGTERM)
    _, errors = process.communicate(timeout=60)
    return [line for line in errors.splitlines() if line.strip()]


def gateway_lines(log_format: str) -> list[str]:
    port = free_port()
    command = [sys.executable, "-m", "app.gateway", "--port", str(port), "--api-url", "http://127.0.0.1:9"]
    return log_lines(command, {"HINDSIGHT_LOG_FORMAT": log_format}, serves=f"http://127.0.0.1:{port}/healthz")


def test_the_gateway_logs_json_lines_like_the_api():
    records = [json.loads(line) for line in gateway_lines("json")]
    assert {"time", "level", "logger", "message", "request_id"} <= records[0].keys()
    assert any(record["logger"] == "hindsight.gateway" and "127.0.0.1:9" in record["message"] for record in records)


def test_plain_logs_for_the_gateway_and_the_api_alike(database_url):
    gateway = gateway_lines("plain")
    api = log_lines([sys.executable, "-m", "app", "migrate"], {"DATABASE_URL": database_url, "HINDSIGHT_LOG_FORMAT": "plain"})
    for lines in (gateway, api):
        assert lines and all(not line.startswith("{") and " INFO " in line for line in lines), lines
