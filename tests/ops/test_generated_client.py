"""A client generated from /openapi.json by openapi-python-client (offline, from the file)
writes and searches: the schema suits generators, with no operation dropped and no warning."""

import importlib
import os
import subprocess
import sys
from pathlib import Path

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "hindsight_generated_client"


def generate(schema: str, into: Path) -> None:
    spec = into / "openapi.json"
    spec.write_text(schema)
    # The generator formats its output with ruff, installed beside it.
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [str(GENERATOR), "generate", "--path", str(spec), "--output-path", str(into / PACKAGE), "--meta", "none"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Warning" not in output and "Unable" not in output, output


async def test_a_generated_client_writes_and_searches(client, tmp_path):
    generate((await client.get("/openapi.json")).text, tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        generated = importlib.import_module(PACKAGE)
        write_memory = importlib.import_module(f"{PACKAGE}.api.memories.write_memory")
        search_memories = importlib.import_module(f"{PACKAGE}.api.search.search_memories")
        models = importlib.import_module(f"{PACKAGE}.models")
    finally:
        sys.path.remove(str(tmp_path))
    api = generated.Client(base_url="http://test").set_async_httpx_client(client)

    written = await write_memory.asyncio(
        client=api, body=models.MemoryWrite(namespace="user:generated", content="User is allergic to peanuts.")
    )
    found = await search_memories.asyncio(
        client=api, body=models.SearchRequest(query="What is the user allergic to?", namespace="user:generated")
    )
    assert isinstance(written, models.WriteResponse) and isinstance(found, models.SearchResponse)
    assert [hit.memory.id for hit in found.hits] == [written.memory.id]
    refused = await search_memories.asyncio(client=api, body=models.SearchRequest(query="peanuts"))
    assert isinstance(refused, models.Problem) and "namespace" in refused.detail
