"""No Docker engine runs here, so the deployment files are checked as data."""

import re
import shlex
from pathlib import Path

import yaml

from app.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_database_service_is_pgvector_with_healthcheck_and_named_volume():
    services = compose()["services"]
    db = services["db"]
    assert db["image"] == "pgvector/pgvector:pg18"
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    volume = db["volumes"][0].split(":")[0]
    assert volume in compose()["volumes"]


def test_migrations_run_once_on_a_healthy_database_before_the_api_and_worker():
    services = compose()["services"]
    migrate = services["migrate"]
    assert migrate["command"] == ["python", "-m", "app", "migrate"]
    assert migrate["build"] == services["api"]["build"] == "."
    assert migrate["depends_on"]["db"]["condition"] == "service_healthy"
    assert migrate["environment"]["DATABASE_URL"] == services["api"]["environment"]["DATABASE_URL"]
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name
    assert services["api"]["command"][:5] == ["python", "-m", "app", "serve", "--no-migrate"]


def test_api_waits_for_a_healthy_database_on_a_custom_network():
    spec = compose()
    api = spec["services"]["api"]
    assert spec["services"]["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert "@db:" in api["environment"]["DATABASE_URL"]  # services address each other by name
    network = api["networks"][0]
    assert spec["networks"][network]["driver"] == "bridge"
    assert network in spec["services"]["db"]["networks"]


def test_container_starts_the_same_entry_point_as_make_run():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.startswith("# ") and "FROM python:3.11-slim" in dockerfile
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE)
    assert cmd is not None
    container_command = yaml.safe_load(cmd.group(1))
    makefile = (ROOT / "Makefile").read_text()
    run_recipe = re.search(r"^run:.*\n\t(.+)$", makefile, re.MULTILINE).group(1)
    first_command = re.split(r"[;&]", run_recipe.lstrip("@"))[0]
    make_command = shlex.split(first_command.replace("$(PY)", "python"))[:4]  # then make's WORKERS option
    assert container_command[: len(make_command)] == make_command == ["python", "-m", "app", "serve"]


def test_revision_worker_runs_from_the_same_image_after_the_migrations():
    services = compose()["services"]
    worker, api = services["worker"], services["api"]
    assert worker["build"] == api["build"] == "."
    assert worker["command"] == ["python", "-m", "app", "worker"]
    assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert api["environment"]["HINDSIGHT_REVISION_MODE"] == "async"
    assert worker["environment"]["DATABASE_URL"] == api["environment"]["DATABASE_URL"]


def test_gateway_runs_from_the_same_image_and_reaches_the_api_by_name():
    services = compose()["services"]
    gateway, api = services["gateway"], services["api"]
    assert gateway["build"] == api["build"] == "."
    assert gateway["command"] == ["python", "-m", "app.gateway", "--host", "0.0.0.0"]
    assert gateway["ports"] == [f"{Settings().gateway_port}:{Settings().gateway_port}"]
    assert gateway["depends_on"]["api"]["condition"] == "service_healthy"
    assert gateway["environment"]["HINDSIGHT_GATEWAY_API_URL"] == "http://api:8000"
    assert gateway["networks"] == api["networks"]
    assert f"http://127.0.0.1:{Settings().gateway_port}/healthz" in " ".join(gateway["healthcheck"]["test"])


def test_make_run_stops_the_gateway_when_the_api_stops():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert '$(PY) -m app.gateway --api-url "$$($(PY) -m app api-url)" &' in recipe
    assert re.search(r"trap 'kill \$\$api \$\$gateway.*' .*EXIT", recipe)
    assert recipe.rstrip().endswith("wait $$api")


def test_api_and_worker_take_llm_settings_from_an_optional_env_file():
    services = compose()["services"]
    for name in ("api", "worker"):
        assert services[name]["env_file"] == [{"path": ".env", "required": False}], name
    assert "env_file" not in services["db"]  # the database's own settings stay in the file
