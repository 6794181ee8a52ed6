"""The bulk path's proofs in helper processes (issue 16): ingestion on more than one core.

Proving a batch of lines (``bulk.prove_batch``: decoding, hashing and the SQL that accepts
what it can prove) is about two thirds of an ingestion's CPU and needs nothing of the
warehouse but the stored suite instances. So the ingesting process hands batches, in file
order, to prover processes (in turn, at most ``IN_FLIGHT_PER_PROVER`` each), proves a batch
itself whenever they are all busy, and stages every batch, validates its unproven lines one
by one and publishes exactly as the serial path does, batch after batch in file order. A
batch's proof is a pure function of its lines, whoever computes it, so the rows staged,
their order and the quarantine rows are the serial path's. With one prover both cores work
whichever side (proving or staging) is behind.

Why processes and not threads: DuckDB releases the GIL only inside a statement, and the
Python between statements (hashing, Arrow batches, the config keys) serializes the threads;
a threaded variant measured earlier gained no wall time. Why ``subprocess`` and not
``multiprocessing``'s fork: the ingesting process holds an open DuckDB warehouse with its
own threads, which must not be forked; a fresh interpreter (``python -m
litmus.ingestion.provers``) holds nothing but its own in-memory scratch database.

Protocol, over the prover's stdin and stdout, each message one length-prefixed Arrow IPC
stream (a length of 0 stands for "nothing proven"):

- to the prover: first the stored instances (the file's hash in the schema's metadata),
  then one (line_no, line) table per batch; end of input means stop;
- from the prover: per batch, its proven trajectories and then its steps.

A prover that fails exits; the ingesting process then raises, and the file's transaction
rolls back (nothing of the file is stored, as for any other error). A killed ingesting
process closes the provers' input, and they exit.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import struct
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import IO, Any

import pyarrow as pa

from litmus.child_process import ModuleProcess
from litmus.ingestion.bulk import BATCH_SCHEMA, Proven, batch_table, open_scratch, prove_batch

# Batches handed out and not yet staged, per prover: two keep each prover busy while the
# ingesting process stages the previous batch, and bound the memory of what is in flight.
IN_FLIGHT_PER_PROVER = 2
_LENGTH = struct.Struct("<Q")
_FILE_HASH_KEY = b"file_hash"


class ProverError(RuntimeError):
    """A prover process failed (its error output is in the message)."""


def _failure_message(code: int, detail: str) -> str:
    """What failed first (a traceback's exception is its last line; a signal has no text),
    then the prover's whole error output."""
    if code < 0:
        try:
            cause = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            cause = f"killed by signal {-code}"
    else:
        lines = [line for line in detail.splitlines() if line.strip()]
        cause = lines[-1].strip() if lines else f"exit code {code}"
    first = f"an ingestion prover process failed ({cause})"
    return f"{first}\n{detail}" if detail else first


def _write_table(out: IO[bytes], table: pa.Table | None) -> None:
    if table is None:
        out.write(_LENGTH.pack(0))
        return
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    buffer = sink.getvalue()
    out.write(_LENGTH.pack(buffer.size))
    out.write(memoryview(buffer))


def _read_exactly(source: IO[bytes], size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = source.read(left)
        if not chunk:
            return None  # the other side closed the pipe
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


_EOF = object()
_STOP = object()


def _read_table(source: IO[bytes]) -> pa.Table | object | None:
    """The next table, None for "nothing", or ``_EOF`` if the pipe closed."""
    header = _read_exactly(source, _LENGTH.size)
    if header is None:
        return _EOF
    (size,) = _LENGTH.unpack(header)
    if size == 0:
        return None
    body = _read_exactly(source, size)
    if body is None:
        return _EOF
    return pa.ipc.open_stream(pa.py_buffer(body)).read_all()


class _Prover:
    """One prover process, with a thread draining its output (so that neither side ever
    blocks writing a full pipe the other is not reading)."""

    def __init__(self, instances: pa.Table) -> None:
        self.worker = ModuleProcess("litmus.ingestion.provers")
        self.stdin, self.stdout = self.worker.stdin, self.worker.stdout
        self.results: queue.Queue[Any] = queue.Queue()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()
        # Batches go to the prover from a thread of their own: a 10 MB batch does not fit the
        # pipe, so writing it blocks until the prover has finished the batch before it and
        # reads this one; written from the ingesting thread, that wait kept it from proving
        # or staging meanwhile (one core busy, not two). The instances go first, while the
        # prover starts (its imports take ~0.4 s).
        self.outbox: queue.Queue[pa.Table | object] = queue.Queue()
        self.outbox.put(instances)
        self.sender = threading.Thread(target=self._send_all, daemon=True)
        self.sender.start()

    def _drain(self) -> None:
        while True:
            trajectories = _read_table(self.stdout)
            if trajectories is _EOF:
                self.results.put(_EOF)
                return
            steps = None if trajectories is None else _read_table(self.stdout)
            if steps is _EOF:
                self.results.put(_EOF)
                return
            self.results.put(None if trajectories is None else (trajectories, steps))

    def _send_all(self) -> None:
        """The sender thread: writes the outbox in order; ``_STOP`` closes the prover's input
        (end of input means stop). Only this thread touches the prover's stdin. A prover
        that is gone fails the ingestion where its results are awaited (``receive``)."""
        try:
            while (table := self.outbox.get()) is not _STOP:
                assert isinstance(table, pa.Table)
                _write_table(self.stdin, table)
                self.stdin.flush()
        except BrokenPipeError:
            pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                self.stdin.close()

    def send(self, table: pa.Table) -> None:
        """Queue a batch for the prover; returns at once (``ProverPool`` bounds how many
        are in flight)."""
        if not self.sender.is_alive():  # its pipe broke: the prover is gone
            self.fail()
        self.outbox.put(table)

    def receive(self) -> Proven:
        result = self.results.get()
        if result is _EOF:
            self.fail()
        return result  # type: ignore[no-any-return]

    def fail(self) -> None:
        code, detail = self.worker.ended()
        raise ProverError(_failure_message(code, detail))

    def close(self) -> None:
        # batches still queued are not needed any more (an ingestion that ends normally has
        # received every result before closing)
        with contextlib.suppress(queue.Empty):
            while True:
                self.outbox.get_nowait()
        self.outbox.put(_STOP)
        self.sender.join(timeout=30)
        if self.sender.is_alive():  # the prover stopped reading: only killing it frees the pipe
            self.worker.kill()
            self.sender.join()
        self.worker.stop(timeout=30)
        self.reader.join(timeout=30)
        self.stdout.close()


class ProverPool:
    """``n`` prover processes proving one file's batches; results come back in the order
    the batches were submitted."""

    def __init__(self, n: int, instances: pa.Table, file_hash: str) -> None:
        metadata = {**(instances.schema.metadata or {}), _FILE_HASH_KEY: file_hash.encode()}
        instances = instances.replace_schema_metadata(metadata)
        self.provers: list[_Prover] = []
        try:
            for _ in range(n):
                self.provers.append(_Prover(instances))
        except BaseException:
            self.close()
            raise
        self.submitted = 0
        # prover index of every batch submitted and not yet received, oldest first
        self.in_flight: deque[int] = deque()

    @property
    def full(self) -> bool:
        return len(self.in_flight) >= IN_FLIGHT_PER_PROVER * len(self.provers)

    def __len__(self) -> int:
        return len(self.in_flight)

    def submit(self, lines: Sequence[tuple[int, bytes]]) -> None:
        index = self.submitted % len(self.provers)
        self.submitted += 1
        self.in_flight.append(index)
        self.provers[index].send(batch_table(lines))

    def oldest_ready(self) -> bool:
        """Whether the oldest batch submitted and not received yet is proven already."""
        return bool(self.in_flight) and not self.provers[self.in_flight[0]].results.empty()

    def receive(self) -> Proven:
        """The proof of the oldest batch submitted and not received yet."""
        return self.provers[self.in_flight.popleft()].receive()

    def close(self) -> None:
        """Stop the provers; closing again does nothing (an ingestion closes a head start's
        pool once its proofs are received, and its owner closes it whatever happened)."""
        provers, self.provers = self.provers, []
        for prover in provers:
            prover.close()


def default_provers() -> int:
    """How many prover processes to use: ``LITMUS_INGEST_PROVERS`` if set (0 proves in the
    ingesting process itself), else one on a machine of two cores or more: the ingesting
    process proves batches too whenever the prover is busy (``ingest_items``), so one prover
    keeps two cores busy, and each more costs a process's memory (~400 MB at peak)."""
    if not sys.executable:  # an embedded interpreter: no Python to start the prover with
        return 0
    setting = os.environ.get("LITMUS_INGEST_PROVERS")
    if setting is not None and setting.strip():
        return max(0, int(setting))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 1 if (cores or 1) >= 2 else 0


def _serve(source: IO[bytes], out: IO[bytes]) -> None:
    """A prover's loop: the instances first, then a proof per batch until end of input."""
    instances = _read_table(source)
    if not isinstance(instances, pa.Table):
        return
    file_hash = (instances.schema.metadata or {})[_FILE_HASH_KEY].decode()
    scratch = open_scratch(instances.replace_schema_metadata(None))
    try:
        while True:
            batch = _read_table(source)
            if batch is _EOF:
                return
            assert isinstance(batch, pa.Table) and batch.schema.equals(BATCH_SCHEMA)
            proven = prove_batch(scratch, batch, file_hash)
            if proven is None:
                _write_table(out, None)
            else:
                _write_table(out, proven[0])
                _write_table(out, proven[1])
            out.flush()
    finally:
        scratch.close()


if __name__ == "__main__":
    _serve(sys.stdin.buffer, sys.stdout.buffer)
