"""The CLI exports and imports through the database, with a progress bar on stderr."""

import json

from sqlalchemy import text

from app.transfer import cli


async def test_cli_round_trip_through_a_file(
    live_client, live_namespace, settings, database_url, engine, tmp_path, capsys
):
    for content in ("User plays the cello.", "User's sister lives in Oslo."):
        assert (
            await live_client.post("/v1/memories", json={"namespace": live_namespace, "content": content})
        ).status_code == 201
    configured = settings.model_copy(update={"database_url": database_url})
    path = tmp_path / "export.jsonl"
    records = await cli.export_to(live_namespace, path, settings=configured)
    assert records == 3 and json.loads(path.read_text().splitlines()[0])["namespace"] == live_namespace
    copy = f"{live_namespace}-copy"
    try:
        report = await cli.import_from(path, namespace=copy, ids="new", settings=configured)
        assert report["imported"]["memory"] == 2 and report["source_namespace"] == live_namespace
        assert "import into" in capsys.readouterr().err
        async with engine.connect() as connection:
            copied = await connection.scalar(text("SELECT count(*) FROM memories WHERE namespace = :ns"), {"ns": copy})
        assert copied == 2
    finally:
        async with engine.begin() as connection:
            await connection.execute(text("DELETE FROM memories WHERE namespace = :ns"), {"ns": copy})
            await connection.execute(text("DELETE FROM namespace_state WHERE namespace = :ns"), {"ns": copy})
