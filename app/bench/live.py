"""The real service as a separate process on loopback, on an embedded PostgreSQL of its own
that the caller can kill and restart: what `make load` and `make fuzz` run against."""

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.core.embedded import EmbeddedPostgres
from app.core.migrations import scratch_database


@dataclass
class LiveService:
    base_url: str
    database: EmbeddedPostgres
    log_path: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_ready(base_url: str, process: subprocess.Popen, log_path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode}; see {log_path}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"the service was not ready within {timeout:g} s; see {log_path}")


@contextmanager
def live_service(extra_env: dict[str, str] | None = None, *, workers: int = 1) -> Iterator[LiveService]:
    """Start `python -m app serve` (`workers` processes on one port) against a fresh migrated
    database; stop both afterwards."""
    workdir = Path(tempfile.mkdtemp(prefix="hindsight-live-"))
    database = EmbeddedPostgres(workdir, keep_data=False)
    url = scratch_database(database.uri, purpose="live")
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "HINDSIGHT_DATA_DIR": str(workdir),
        "HINDSIGHT_LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    log_path = workdir / "service.log"
    with log_path.open("w") as log:
        command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", str(workers)]
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base_url, process, log_path)
            yield LiveService(base_url=base_url, database=database, log_path=log_path)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
