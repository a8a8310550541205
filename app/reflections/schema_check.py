"""Tool arguments checked against the JSON Schema a client sent with the call: hostile input.

The schema is the client's, so nothing in it may reach outside or run unbounded on the API's
event loop:
- jsonschema-rs with `offline=True` resolves no remote or file reference (an unresolvable
  `$ref` makes the schema unusable, noted), and its `RegexOptions` engine (Rust's `regex`
  crate) matches every pattern in linear time;
- an invalid schema is no schema: the review goes on without it and says why;
- a linear engine does not bound everything (references can form a graph that is
  exponential to walk, uniqueItems is quadratic), so each check runs in a worker process
  that is killed when it passes the time limit, with an address-space limit of its own.

Workers are plain `python -m app.reflections.schema_check` processes speaking JSON lines
over pipes: they import nothing but jsonschema-rs (a multiprocessing pool would re-import the
API's main module in each), and a stuck one is killed by its pid.
"""

import asyncio
import contextlib
import json
import logging
import sys
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

# A reply line holds clipped texts only, but a schema or args line may be large.
_LINE_LIMIT = 64 * 2**20
# Texts a check reports back (values, messages) are cut to this: they end up in lesson text.
_TEXT_CHARS = 200


@dataclass(frozen=True, slots=True)
class ArgumentError:
    """How one call's arguments broke the schema: the most relevant error only."""

    keyword: str  # the schema keyword that failed: type, required, pattern, ...
    expected: Any  # its value as the check reports it: the types, the missing field, the limit
    path: tuple[str | int, ...]  # where in the arguments
    instance: str  # the offending value as clipped JSON
    instance_type: str  # its JSON type
    message: str


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """One schema's verdict on several calls' arguments, in order (None: valid, or not
    checked); `note` says why the schema, or some of the calls, could not be checked."""

    errors: list[ArgumentError | None]
    note: str | None = None


# ------------------------------------------------------------------ the worker process


def _clip(text: str) -> str:
    return text if len(text) <= _TEXT_CHARS else text[:_TEXT_CHARS] + "…"


def _json_text(value: Any) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, default=str))


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return "null"


def _first_line(error: Exception) -> str:
    return _clip(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__)


# Keywords that only say "one of the alternatives failed": an error they hold is less telling
# than a sibling's (as in jsonschema's best_match).
_WEAK = frozenset({"anyOf", "oneOf"})


def _most_relevant(errors: list[Any]) -> Any | None:
    """The shallowest error, a specific keyword before a combinator; the first among equals."""
    if not errors:
        return None
    return min(errors, key=lambda error: (len(error.instance_path), error.kind.name in _WEAK))


def _expected(kind: Any) -> Any:
    value = kind.value
    if kind.name == "type":
        return [str(name) for name in value]
    return value if isinstance(value, (str, int, float)) and len(str(value)) <= _TEXT_CHARS else _json_text(value)


def _report(error: Any) -> dict[str, Any]:
    return {
        "keyword": error.kind.name,
        "expected": _expected(error.kind),
        "path": [part if isinstance(part, int) else _clip(str(part)) for part in error.instance_path],
        "instance": _json_text(error.instance),
        "instance_type": _json_type(error.instance),
        "message": _clip(error.message),
    }


def _check(job: dict[str, Any]) -> dict[str, Any]:
    import jsonschema_rs

    try:
        validator = jsonschema_rs.validator_for(
            job["schema"],
            offline=True,  # no http(s) and no file references: they are the client's to point anywhere
            pattern_options=jsonschema_rs.RegexOptions(),
            validate_formats=False,
        )
    except Exception as error:  # any reason the schema cannot be built is the client's
        return {"note": f"the input schema is not usable: {_first_line(error)}", "errors": []}
    errors: list[dict[str, Any] | None] = []
    for args in job["args"]:
        try:
            found = _most_relevant(list(validator.iter_errors(args)))
        except Exception as error:
            return {"note": f"the input schema could not be applied: {_first_line(error)}", "errors": []}
        errors.append(None if found is None else _report(found))
    return {"note": None, "errors": errors}


def _serve() -> None:
    """Worker loop: one JSON job per line on stdin, one JSON answer per line on stdout."""
    import resource

    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for line in sys.stdin:
        sys.stdout.write(json.dumps(_check(json.loads(line)), ensure_ascii=False) + "\n")
        sys.stdout.flush()


# ------------------------------------------------------------------ the API side


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, memory_bytes: int) -> "_Worker":
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            __name__,
            str(memory_bytes),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=_LINE_LIMIT,
        )
        return cls(process)

    async def ask(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job).encode() + b"\n")
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise ConnectionError(f"the schema worker exited ({self.process.returncode})")
        return json.loads(line)

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        await self.process.wait()


class SchemaChecker:
    """A small pool of worker processes; a check that passes the time limit kills its worker
    (a new one starts on demand). Waiting for a free worker is bounded by the same limit."""

    def __init__(self, *, workers: int, timeout_seconds: float, memory_bytes: int, max_args_bytes: int) -> None:
        self._timeout = timeout_seconds
        self._memory = memory_bytes
        self._max_args_bytes = max_args_bytes
        self._slots = asyncio.Semaphore(workers)
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()

    async def check(self, schema: dict[str, Any], args: list[Any]) -> SchemaCheck:
        """Each arguments' most relevant error against the schema; args past the size budget
        are not checked."""
        sent, budget = [], self._max_args_bytes
        for each in args:
            size = len(json.dumps(each, default=str))
            if size > budget:
                break
            sent.append(each)
            budget -= size
        unchecked = len(args) - len(sent)
        skipped = f"{unchecked} call(s) not checked: their arguments pass the size budget" if unchecked else None
        answer = await self._run({"schema": schema, "args": sent}) if sent else {"note": None, "errors": []}
        if answer["note"] is not None or (not sent and unchecked):
            return SchemaCheck([None] * len(args), note=answer["note"] or skipped)
        errors = [None if found is None else _error(found) for found in answer["errors"]]
        return SchemaCheck(errors + [None] * unchecked, note=skipped)

    async def _run(self, job: dict[str, Any]) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self._timeout):
                await self._slots.acquire()
        except TimeoutError:
            return {"note": "the input schema was not checked: every schema worker stayed busy", "errors": []}
        worker: _Worker | None = None
        try:
            worker = self._idle.pop() if self._idle else await _Worker.start(self._memory)
            self._busy.add(worker)
            async with asyncio.timeout(self._timeout):
                answer = await worker.ask(job)
        except TimeoutError:
            answer = {"note": f"checking the input schema took over {self._timeout:g} s and was stopped", "errors": []}
            await self._discard(worker)
            worker = None
        except (ConnectionError, OSError, ValueError) as error:
            logger.warning("schema worker failed: %s", error)
            answer = {"note": "checking the input schema failed (it ran out of memory or crashed)", "errors": []}
            await self._discard(worker)
            worker = None
        except BaseException:  # cancelled mid-check: the worker's state is unknown
            await self._discard(worker)
            raise
        finally:
            if worker is not None:
                self._busy.discard(worker)
                self._idle.append(worker)
            self._slots.release()
        return answer

    async def _discard(self, worker: _Worker | None) -> None:
        if worker is not None:
            self._busy.discard(worker)
            await worker.kill()

    async def close(self) -> None:
        for worker in [*self._idle, *self._busy]:
            await worker.kill()
        self._idle.clear()
        self._busy.clear()


def _error(found: dict[str, Any]) -> ArgumentError:
    return ArgumentError(
        keyword=found["keyword"],
        expected=found["expected"],
        path=tuple(found["path"]),
        instance=found["instance"],
        instance_type=found["instance_type"],
        message=found["message"],
    )


if __name__ == "__main__":
    _serve()
