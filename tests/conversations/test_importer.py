"""`python -m app import-conversations FILE.jsonl`: a file of conversations, resumable by running it again."""

import json

from sqlalchemy import text

from app.conversations import importer
from tests.conversations.conftest import erase


async def test_a_file_of_conversations_is_remembered_and_a_rerun_stores_nothing_new(
    settings, database_url, engine, tag, tmp_path, capsys
):
    namespace = f"user:{tag}"
    lines = [
        {
            "namespace": namespace,
            "session_id": "a",
            "messages": [{"role": "user", "content": "I live in Oslo."}, {"role": "assistant", "content": "Noted."}],
        },
        "this line is not JSON",
        {"namespace": namespace, "session_id": "b", "messages": [{"role": "user", "content": "I'm vegetarian."}]},
        {"namespace": namespace, "session_id": "c", "messages": []},
    ]
    path = tmp_path / "chats.jsonl"
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n\n", encoding="utf-8"
    )
    configured = settings.model_copy(update={"database_url": database_url})
    try:
        first = await importer.run(path, extract=None, settings=configured)
        assert {k: first[k] for k in ("conversations", "received", "stored", "extracted")} == {
            "conversations": 2,
            "received": 3,
            "stored": 3,
            "extracted": 2,
        }
        assert [refused["line"] for refused in first["refused_lines"]] == [2, 4]
        assert "conversations" in capsys.readouterr().err  # the progress bar

        again = await importer.run(path, extract=None, settings=configured)
        assert (again["stored"], again["already_stored"], again["extracted"]) == (0, 3, 0)
        async with engine.connect() as connection:
            count = await connection.scalar(
                text("SELECT count(*) FROM memories WHERE namespace = :ns"), {"ns": namespace}
            )
        assert count == 5  # three messages, two facts
    finally:
        await erase(engine, f"%{tag}%")
