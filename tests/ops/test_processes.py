"""Two API processes on one database, as `make run WORKERS=2` or two replicas behind a load
balancer run: what one process learns from a write, the other knows at once."""

import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.gateway.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 180
LIMIT = 4  # writes a minute per session, across both processes


@pytest.fixture(scope="module")
def two_apis(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Two `serve` processes on the test database (already migrated), each its own port."""
    logs = tmp_path_factory.mktemp("apis")
    env = {
        **{name: value for name, value in os.environ.items() if not name.startswith("HINDSIGHT_")},
        "DATABASE_URL": database_url,
        "HINDSIGHT_DATA_DIR": str(logs),
        "HINDSIGHT_WRITE_RATE_LIMIT_PER_MINUTE": str(LIMIT),
        "HINDSIGHT_SEARCH_CACHE_SECONDS": "300",
    }
    processes, urls = [], []
    try:
        for name in ("a", "b"):
            port = free_port()
            with open(logs / f"{name}.log", "w") as log:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "app", "serve", "--no-migrate", "--port", str(port)],
                        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                    )
                )
            urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + STARTUP_SECONDS
        for process, url, name in zip(processes, urls, ("a", "b"), strict=True):
            while True:
                assert process.poll() is None, (logs / f"{name}.log").read_text()[-2000:]
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, f"API {name} did not start"
                time.sleep(0.3)
        yield urls[0], urls[1]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
async def namespace(engine) -> AsyncIterator[str]:
    name = f"test:procs-{uuid.uuid4().hex[:12]}"
    yield name
    async with engine.begin() as connection:
        for table in ("revision_log", "memories", "namespace_state"):
            await connection.execute(text(f"DELETE FROM {table} WHERE namespace = :ns"), {"ns": name})


def write(url: str, namespace: str, content: str, session_id: str) -> httpx.Response:
    body = {"namespace": namespace, "content": content, "session_id": session_id}
    return httpx.post(f"{url}/v1/memories", json=body, timeout=60)


def search(url: str, namespace: str, query: str) -> list[str]:
    response = httpx.post(f"{url}/v1/memories/search", json={"namespace": namespace, "query": query}, timeout=60)
    response.raise_for_status()
    return [hit["memory"]["content"] for hit in response.json()["hits"]]


def test_a_write_through_one_process_invalidates_the_others_cached_search(two_apis, namespace):
    a, b = two_apis
    assert write(a, namespace, "The staging server runs Debian 12.", "s-cache").status_code == 201
    query = "Which operating system do the servers run?"
    first = search(a, namespace, query)
    assert search(a, namespace, query) == first  # cached in process a for five minutes
    assert write(b, namespace, "The production server runs Alpine Linux.", "s-cache").status_code == 201
    assert "The production server runs Alpine Linux." in search(a, namespace, query)


def test_the_write_rate_limit_counts_writes_through_both_processes(two_apis, namespace):
    a, b = two_apis
    statuses = [write(url, namespace, f"Import step {n} finished.", "s-rate").status_code for n, url in enumerate([a, b] * (LIMIT // 2))]
    assert statuses == [201] * LIMIT
    refused = write(a, namespace, "Import step 99 finished.", "s-rate")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert write(b, namespace, "Import step 100 finished.", "s-rate").status_code == 429
    # Another session has a window of its own.
    assert write(b, namespace, "Another session's note.", "s-other").status_code == 201
