"""`make run` as a user runs it: the API and the gateway start on the ports given, the gateway
calls the API started with it, every line they print is JSON, and stopping the API, by SIGTERM
or Ctrl-C, stops the embedded PostgreSQL of the data directory too."""

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest
from mcp import Client

from tests.gateway.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 180


def postgres_of(data_dir: Path) -> list[str]:
    """Every process whose command line names the data directory (the server, its watcher)."""
    found = subprocess.run(["pgrep", "-af", str(data_dir)], capture_output=True, text=True)
    return found.stdout.splitlines()


def wait_until(check, *, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {seconds:g} s")
        time.sleep(0.2)


@contextmanager
def make_run(data_dir: Path, log: Path) -> Iterator[tuple[subprocess.Popen, str, str]]:
    """`make run` in its own session (a terminal's process group), with only the ports and the
    data directory set; yields (make, API URL, MCP URL) once both answer."""
    api_port, gateway_port = free_port(), free_port()
    # Not make's own variables either: under `make test` they would make the inner make print
    # "Entering directory" lines, which a user's `make run` does not.
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("HINDSIGHT_") and name not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")
    }
    env = {
        **inherited,
        "HINDSIGHT_DATA_DIR": str(data_dir),
        "HINDSIGHT_PORT": str(api_port),
        "HINDSIGHT_GATEWAY_PORT": str(gateway_port),
        # A loaded machine can take seconds to embed a write; this test is not about the deadline.
        "HINDSIGHT_GATEWAY_TIMEOUT_SECONDS": "60",
    }
    env.pop("DATABASE_URL", None)
    with log.open("w") as output:
        make = subprocess.Popen(
            ["make", "run"], cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    api, gateway = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{gateway_port}"
    try:
        wait_until(lambda: _answers(f"{api}/readyz") and _answers(f"{gateway}/healthz"), seconds=STARTUP_SECONDS, what="make run was not ready")
        yield make, api, f"{gateway}/mcp"
    except BaseException:
        print(f"make run's output:\n{log.read_text()[-6000:]}")  # shown with the failure
        raise
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGTERM)
            make.wait(timeout=60)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def api_process(make: subprocess.Popen) -> psutil.Process:
    for child in psutil.Process(make.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a short-lived helper may be gone already
            if child.cmdline()[1:4] == ["-m", "app", "serve"]:
                return child
    raise AssertionError("make run started no API process")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("make-run")


async def test_sigterm_to_the_api_stops_the_gateway_and_postgres_and_the_gateway_called_this_api(data_dir, tmp_path):
    with make_run(data_dir, tmp_path / "run.log") as (make, api, mcp_url):
        assert postgres_of(data_dir), "the embedded server runs under the data directory"
        # Only HINDSIGHT_PORT was set: the gateway must call that API, not the default port.
        async with Client(mcp_url) as client:
            written = await client.call_tool(
                "hindsight_write", {"session_id": "s1", "namespace": "user:run", "content": "User prefers green tea."}
            )
        assert not written.is_error and not written.structured_content.get("degraded"), written.content
        memory_id = written.structured_content["memory"]["id"]
        assert httpx.get(f"{api}/v1/memories/{memory_id}").status_code == 200

        api_process(make).send_signal(signal.SIGTERM)  # what docker and systemd send
        make.wait(timeout=60)
        wait_until(lambda: not postgres_of(data_dir), seconds=30, what="PostgreSQL of the data directory still ran")
    lines = [line for line in (tmp_path / "run.log").read_text().splitlines() if line.strip()]
    loggers = {json.loads(line)["logger"] for line in lines}  # one format: every line is JSON
    assert {"hindsight", "hindsight.gateway", "uvicorn.error"} <= loggers


def test_ctrl_c_stops_everything(data_dir, tmp_path):
    with make_run(data_dir, tmp_path / "run.log") as (make, _, _):
        os.killpg(make.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
        make.wait(timeout=60)
        wait_until(lambda: not postgres_of(data_dir), seconds=30, what="PostgreSQL of the data directory still ran")
