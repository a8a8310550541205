"""Jobs: state in PostgreSQL, progress, takeover when the running process died, requeue on shutdown."""

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

from sqlalchemy import text

from app.jobs.runner import JobContext, JobRunner, handler
from tests.conversations.conftest import said


@handler("test.fail")
async def _fail(job: JobContext) -> dict:
    raise ValueError(f"boom {job.params['n']}")


_release = asyncio.Event()


@handler("test.block")
async def _block(job: JobContext) -> dict:
    await job.progress(1, 2)
    await _release.wait()
    return {"released": True}


async def _job(engine, job_id) -> dict:
    async with engine.connect() as connection:
        row = (await connection.execute(text("SELECT * FROM jobs WHERE id = :id"), {"id": job_id})).mappings().one()
    return dict(row)


async def _until(engine, job_id, **expected) -> dict:
    for _ in range(500):
        row = await _job(engine, job_id)
        if all(row[name] == value for name, value in expected.items()):
            return row
        await asyncio.sleep(0.02)
    raise AssertionError(f"job {job_id} never reached {expected}: {row}")


async def test_a_long_conversation_runs_as_a_job_and_reports_progress(committing, tag, engine, monkeypatch):
    client = await committing(conversation_inline_max_messages=3, conversation_chunk_messages=2)
    reported: list[tuple[int, int]] = []
    real_report = JobRunner.report

    async def spy(self, job_id, *, done, total):
        if done is not None:
            reported.append((done, total))
        await real_report(self, job_id, done=done, total=total)

    monkeypatch.setattr(JobRunner, "report", spy)
    start = datetime(2025, 3, 1, tzinfo=timezone.utc)
    messages = [said(f"Note number {n}.", id=f"m{n}", at=(start + timedelta(minutes=n)).isoformat()) for n in range(7)]
    messages.append(said("I live in Lisbon.", id="m7", at=(start + timedelta(minutes=8)).isoformat()))
    namespace = f"user:{tag}"
    response = await client.post(
        "/v1/conversations", json={"namespace": namespace, "session_id": "s1", "messages": messages}
    )

    assert response.status_code == 202, response.text
    job = response.json()["job"]
    assert response.headers["location"] == f"/v1/jobs/{job['id']}"
    assert (
        job["kind"] == "conversation.ingest"
        and job["namespace"] == namespace
        and job["status"] in ("queued", "running")
    )
    await client._transport.app.state.jobs.wait(uuid.UUID(job["id"]))

    done = (await client.get(f"/v1/jobs/{job['id']}")).json()
    assert done["status"] == "succeeded" and done["attempts"] == 1 and done["error"] is None
    assert done["progress"] == {"done": 16, "total": 16, "fraction": 1.0}  # 8 stored, then 8 extracted
    assert (done["result"]["stored"], done["result"]["received"]) == (8, 8)
    assert [m["content"] for m in done["result"]["extraction"]["memories"]] == ["User lives in Lisbon."]
    # Progress came chunk by chunk, never backwards.
    assert reported[0] == (0, 16) and reported[-1] == (16, 16)
    assert [d for d, _ in reported] == sorted(d for d, _ in reported) and len(reported) >= 8
    assert (await _job(engine, job["id"]))["params"] == {}  # the conversation's text is not kept in the job


async def test_a_job_whose_process_died_is_taken_over_and_resumes(committing, tag, engine):
    client = await committing(jobs_stale_seconds=1)
    namespace = f"user:{tag}"
    messages = [said(f"Step {n} of the plan.", id=f"s{n}", at=f"2025-04-01T10:0{n}:00Z") for n in range(4)]
    # The dead process had stored the first two messages.
    first = await client.post(
        "/v1/conversations",
        json={"namespace": namespace, "session_id": "s1", "messages": messages[:2], "extract": "none"},
    )
    assert first.status_code == 200
    request = {"namespace": namespace, "session_id": "s1", "messages": messages, "extract": "none"}
    async with engine.begin() as connection:
        job_id = (
            await connection.execute(
                text(
                    "INSERT INTO jobs (kind, namespace, status, params, attempts, owner, started_at, heartbeat_at) "
                    "VALUES ('conversation.ingest', :ns, 'running', CAST(:params AS jsonb), 1, 'dead-host:1:x', "
                    "now() - interval '1 hour', now() - interval '1 hour') RETURNING id"
                ),
                {"ns": namespace, "params": __import__("json").dumps({"request": request, "withheld": {}})},
            )
        ).scalar_one()
    runner = client._transport.app.state.jobs

    assert job_id in await runner.sweep()
    await runner.wait(job_id)
    row = await _job(engine, job_id)
    assert (row["status"], row["attempts"], row["owner"]) == ("succeeded", 2, runner.owner)
    assert (row["result"]["stored"], row["result"]["already_stored"]) == (2, 2)
    assert await runner.sweep() == []  # nothing left to take over


async def test_a_failing_job_reports_its_error_and_one_that_kept_dying_gives_up(committing, tag, engine):
    client = await committing(jobs_stale_seconds=1, jobs_max_attempts=3)
    runner = client._transport.app.state.jobs
    failed = await runner.submit(kind="test.fail", namespace=f"user:{tag}", params={"n": 7})
    await runner.wait(failed.id)
    row = await _job(engine, failed.id)
    assert (row["status"], row["error"]) == ("failed", "ValueError: boom 7")

    async with engine.begin() as connection:
        dying = (
            await connection.execute(
                text(
                    "INSERT INTO jobs (kind, namespace, status, params, attempts, owner, heartbeat_at) "
                    "VALUES ('test.fail', :ns, 'running', '{}', 3, 'dead', now() - interval '1 hour') RETURNING id"
                ),
                {"ns": f"user:{tag}"},
            )
        ).scalar_one()
    assert dying not in await runner.sweep()
    row = await _job(engine, dying)
    assert row["status"] == "failed" and "gave up after 3 attempts" in row["error"]


async def test_shutdown_puts_a_running_job_back_in_the_queue(committing, tag, engine):
    client = await committing()
    runner = client._transport.app.state.jobs
    _release.clear()
    async with runner.running():
        job = await runner.submit(kind="test.block", namespace=f"user:{tag}", params={})
        running = await _until(engine, job.id, status="running", progress_done=1)
        assert (running["progress_done"], running["progress_total"], running["attempts"]) == (1, 2, 1)
    queued = await _job(engine, job.id)
    assert (queued["status"], queued["owner"], queued["attempts"]) == ("queued", None, 0)

    # Another process (here: a fresh runner) picks it up once it has waited the stale time.
    other = JobRunner(
        sessions=runner._sessions,
        state=client._transport.app.state,
        settings=runner._settings.model_copy(update={"jobs_stale_seconds": 0.01}),
    )
    _release.set()
    assert job.id in await other.sweep()
    await other.wait(job.id)
    assert (await _job(engine, job.id))["status"] == "succeeded"


async def test_reading_a_job_needs_its_namespace_in_scope(committing, tag, settings):
    client = await committing(api_keys={"k-own": [f"user:{tag}"], "k-other": ["user:someone"]})
    runner = client._transport.app.state.jobs
    job = await runner.submit(kind="test.fail", namespace=f"user:{tag}", params={"n": 1})
    await runner.wait(job.id)
    own = await client.get(f"/v1/jobs/{job.id}", headers={"Authorization": "Bearer k-own"})
    assert own.status_code == 200 and own.json()["status"] == "failed"
    other = await client.get(f"/v1/jobs/{job.id}", headers={"Authorization": "Bearer k-other"})
    assert other.status_code == 403
    missing = await client.get(f"/v1/jobs/{uuid.uuid4()}", headers={"Authorization": "Bearer k-own"})
    assert missing.status_code == 404 and missing.json()["type"] == "/problems/not-found"
