import os
import subprocess
import sys
from pathlib import Path

from httpx import AsyncClient

ROOT = Path(__file__).resolve().parents[2]


async def test_healthz(client: AsyncClient):
    response = await client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


async def test_readyz_reports_database_and_migration_head(client: AsyncClient):
    body = (await client.get("/readyz")).json()
    assert body["ready"] is True
    assert body["migration"] == body["expected_migration"]


async def test_openapi_documents_the_memory_calls(client: AsyncClient):
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert {"/v1/memories", "/v1/memories:batch", "/v1/memories/{memory_id}", "/debug/recent"} <= set(paths)
    assert (await client.get("/docs")).status_code == 200


async def test_unknown_route_is_a_404_problem(client: AsyncClient):
    response = await client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["type"] == "/problems/not-found"


def test_unreachable_database_url_fails_loudly_without_falling_back(tmp_path: Path):
    env = {
        **os.environ,
        "DATABASE_URL": "postgresql://hindsight:secret@127.0.0.1:1/hindsight",
        "HINDSIGHT_DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "does not fall back" in result.stderr
    assert "secret" not in result.stderr
    assert not (tmp_path / "postgres").exists()
