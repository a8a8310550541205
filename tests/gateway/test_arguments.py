"""Tool arguments as LLMs write them: numbers and booleans spelled as strings are read as the
JSON they spell where the tool wants one, and nothing else changes."""

import pytest
from pydantic import ValidationError

from app.gateway.arguments import published_schema
from app.gateway.tools import SPECS, arguments_model

TOOLS = {spec.name: arguments_model(spec) for spec in SPECS}
MEMORY_ID = "6f1c0f5e-1111-4111-8111-111111111111"


def validated(tool: str, **arguments) -> dict:
    return TOOLS[tool].model_validate({"session_id": "s1", **arguments}).model_dump()


def test_spelled_numbers_and_booleans_are_read_where_the_tool_wants_them():
    search = validated("hindsight_search", namespace="user:u1", query="tea", top_k="5", explain="true")
    assert search["top_k"] == 5 and search["explain"] is True
    write = validated("hindsight_write", namespace="user:u1", content="Tea.", confidence="0.8", ttl_seconds="3600")
    assert write["confidence"] == 0.8 and write["ttl_seconds"] == 3600
    revise = validated("hindsight_revise", memory_id=MEMORY_ID, content="Coffee.", expected_version="2")
    assert revise["expected_version"] == 2
    event = {"type": "tool_call", "tool": "query_order", "args": {}, "status": "ok", "attempt": "2"}
    events = validated("hindsight_record_events", namespace="user:u1", task_id="t1", events=[event])
    assert events["events"][0]["attempt"] == 2


def test_strings_stay_strings_where_text_is_wanted():
    write = validated("hindsight_write", namespace="user:u1", content="42", key="user:u1:answer", query_hint="true")
    assert (write["content"], write["query_hint"]) == ("42", "true")
    event = {"type": "tool_call", "tool": "t", "args": {"id": "7"}, "status": "ok"}
    events = validated("hindsight_record_events", namespace="user:u1", task_id="t1", events=[event])
    assert events["events"][0]["args"] == {"id": "7"}


@pytest.mark.parametrize(("field", "value"), [("top_k", "five"), ("top_k", "true"), ("explain", "1")])
def test_what_a_string_spells_must_still_fit(field, value):
    with pytest.raises(ValidationError):
        validated("hindsight_search", namespace="user:u1", query="tea", **{field: value})


def test_no_tool_schema_has_a_combinator_at_its_root():
    for tool, model in TOOLS.items():
        schema = published_schema(model)
        assert not {"oneOf", "anyOf", "allOf"} & schema.keys(), tool
        assert schema["type"] == "object" and "session_id" in schema["required"]
