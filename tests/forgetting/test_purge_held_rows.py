"""A purge changes memories (restores merge inputs, releases held ones) and then redacts
memory_versions: the version rows of those changes, held until the commit, are redacted too."""

from tests.forgetting.test_purge import NS, places_holding, write

SAID = "User drinks green tea every morning at the Kyoto guesthouse."


async def test_a_released_memory_quoting_the_purged_text_keeps_no_copy_in_its_new_version(client, db_session):
    key = f"{NS}:drink"
    said = (await write(client, SAID, key=key, source={"kind": "user"}))["memory"]
    rumour = await write(
        client,
        "User drinks espresso every morning.",
        key=key,
        source={"kind": "web"},
        metadata={"instead_of": SAID},
    )
    assert rumour["memory"]["status"] == "uncertain" and rumour["revisions"][0]["status"] == "pending"

    purged = await client.delete(f"/v1/memories/{said['id']}", params={"purge": "true"})

    assert purged.status_code == 200, purged.text
    assert purged.json()["erasure"]["restored"] == [rumour["memory"]["id"]]  # released: a new version row
    assert await places_holding(db_session, SAID) == []
