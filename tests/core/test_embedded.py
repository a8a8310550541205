"""The embedded PostgreSQL stops with the last process using it, however that process ends,
and a holder that died without saying so does not keep it running."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ops.test_run import ROOT, postgres_of, wait_until

# A process using the embedded server: it says "ready", then exits cleanly when its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from app.core.embedded import EmbeddedPostgres
EmbeddedPostgres(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.read()
"""


def hold(data_dir: Path) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert holder.stdout.readline().strip() == "ready"
    return holder


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embedded")


def holders_file(data_dir: Path) -> Path:
    return data_dir / "postgres" / ".handle_pids.json"


def test_sigkill_of_the_last_holder_stops_the_server(data_dir):
    holder = hold(data_dir)
    assert postgres_of(data_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    wait_until(lambda: not postgres_of(data_dir), seconds=30, what="PostgreSQL outlived its SIGKILLed holder")
    assert json.loads(holders_file(data_dir).read_text()) == []


def test_a_holder_that_died_unannounced_keeps_nothing_running(data_dir):
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid now names no process: a holder killed before it could clean up
    holders_file(data_dir).write_text(json.dumps([gone.pid]))
    first = hold(data_dir)
    assert gone.pid not in json.loads(holders_file(data_dir).read_text())  # the stale pid is dropped
    second = hold(data_dir)
    first.stdin.close()
    first.wait()
    assert postgres_of(data_dir), "another process still uses the server"
    # The last holder dies unannounced too: a dead pid it did not remove must not pin the server.
    holders_file(data_dir).write_text(json.dumps([*json.loads(holders_file(data_dir).read_text()), gone.pid]))
    second.stdin.close()  # a clean exit, like Ctrl-C after a SIGTERM that left a pid behind
    second.wait()
    # The watcher stops the server under the library's machine-wide lock, which other servers'
    # starts and stops may hold a while on a loaded machine; what is left is named on failure.
    try:
        wait_until(lambda: not postgres_of(data_dir), seconds=60, what="PostgreSQL outlived its last holder")
    except AssertionError as outlived:
        raise AssertionError(f"{outlived}: {postgres_of(data_dir)}") from None
