"""Import Inspect AI evaluation logs (``.eval`` and ``.json``) as native run-log records.

Each Inspect sample × epoch becomes one SPEC §4 record. An ``.eval`` log is a zip (header,
summaries, one JSON member per sample × epoch); when its header's format version is one this
reader is proven on (:data:`FAST_READER_VERSIONS`), the sample members are read directly
(zip inflate + msgspec), only the fields the mapping uses are decoded, and large logs are
read by several processes, a bounded number of chunks in flight. Any other version, a
``.json`` log, and a sample member whose shape is not the one this reader knows go through
``inspect_ai.log``'s own readers (the fallback), never a guess. The tests prove both give the
records Inspect's models give (tests/inspect_reference.py is the oracle).

Samples that cannot be mapped are yielded as :class:`ImportProblem` (they go to the
quarantine; records in = records out + problems), never dropped. A log that cannot be read
(truncated, not an Inspect log, a damaged sample) raises :class:`InspectLogError` naming the
file and, when known, the sample; the message is the one Inspect's reader gives. The
field-by-field mapping is documented in ``docs/importers.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import string
import struct
import sys
import tempfile
import zipfile
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import msgspec
from pydantic import ValidationError

from litmus.child_process import ModuleProcess
from litmus.formats import JUDGE_REFUSALS, RUN_SCHEMA_VERSION, SPLITS, RunRecord

# Inspect is an optional dependency of the domain package: import it lazily so that
# `litmus` stays importable (and the fast reader's worker processes start) without it.

ATTACHMENT_PROTOCOL = "attachment://"
# Logs written by older Inspect versions used this prefix for the same references.
LEGACY_ATTACHMENT_PROTOCOL = "tc://"
# `.eval` format versions (the header's `version`) whose sample members the fast reader is
# proven on (tests/test_inspect_reader_equivalence.py, against logs the installed Inspect
# writes); any other version is read by Inspect's own reader.
FAST_READER_VERSIONS = frozenset({2})
# Samples per chunk handed to one reader (a process, or this one): memory holds at most
# `IN_FLIGHT_PER_PROCESS` chunks per process, whatever the size of the log.
CHUNK_SAMPLES = 256
IN_FLIGHT_PER_PROCESS = 2
# Below this many samples, starting reader processes costs more than it saves.
PARALLEL_MIN_SAMPLES = 2_000
# Samples read per shared zip reader on the fallback path (Inspect's reader).
SAMPLE_BATCH_SIZE = 64

# Inspect sample limits that mean "ran out of budget" (SPEC termination `max_steps`). An
# operator/approver stop or a custom limit is an abort, not a budget exhaustion.
BUDGET_LIMITS = frozenset({"message", "token", "turn", "time", "working", "cost", "context"})
UNVERSIONED_RELEASE = "unversioned"
INSTANCE_ID_PLACEHOLDERS = frozenset({"instance_id", "sample_id", "split", "task"})

ProgressCallback = Callable[[int, int], None]  # (samples read, samples in the log)


class InspectLogError(Exception):
    """An Inspect log file is unreadable (missing, truncated, malformed)."""

    def __init__(self, path: Path, reason: str, *, sample: str | None = None) -> None:
        where = f"{path}" if sample is None else f"{path} (sample {sample})"
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.sample = sample
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        # raised in a reader process and re-raised here: keep the keyword argument
        return _rebuild_log_error, (self.path, self.reason, self.sample)


def _rebuild_log_error(path: Path, reason: str, sample: str | None) -> InspectLogError:
    return InspectLogError(path, reason, sample=sample)


@dataclass(frozen=True)
class ImportMapping:
    """How Inspect log fields map onto a native record; ``None`` means "take it from the log".

    See ``docs/importers.md`` for the defaults and the score value mappings.
    """

    # configuration (SPEC §4 `config`)
    model: str | None = None  # default: the eval's model, e.g. "openai/gpt-4o"
    model_release: str | None = None  # default: the provider-reported model id, else "unversioned"
    harness: str | None = None  # default: the eval's solver/agent, else its plan's solver names
    harness_version: str | None = None  # default: the inspect_ai version that wrote the log
    plugin: str = "none"
    policy_version: str | None = None
    run_id: str | None = None  # default: "<inspect run_id>.<inspect eval_id>"
    # suite instance
    suite: str | None = None  # default: the task name
    suite_version: str | None = None  # default: the task version
    instance_id_field: str = "instance_id"  # sample metadata key holding the instance id
    instance_id_fallback: bool = True  # use the sample id when the metadata key is absent
    instance_id_format: str = "{instance_id}"  # placeholders: instance_id, sample_id, split, task
    split_field: str = "split"  # sample metadata key with the split (used by {split})
    split: str | None = None  # a fixed split for every sample (overrides split_field)
    # judgments (SPEC §4 `judgments`) from Inspect scores
    refusal_scorer: str | None = None
    refusal_score_key: str | None = None  # for dict-valued scores: the key to read
    task_completed_scorer: str | None = None
    task_completed_score_key: str | None = None
    task_completed_threshold: float = 1.0  # numeric score >= threshold means completed
    judge: str | None = None  # default: "inspect:<scorer names>"
    # the record's post_state (SPEC §4): "store" (the sample's whole store), "store:<key>" or
    # "metadata:<key>" (one key's value, an object); default: none mapped (not observed)
    post_state: str | None = None


@dataclass(frozen=True)
class ImportProblem:
    """A sample that could not be mapped; ``epoch`` is the native (0-based) epoch."""

    source: str
    sample: str
    epoch: int | None
    field: str
    reason: str


@dataclass(frozen=True)
class ImportSummary:
    source: Path
    output: Path
    records: int
    problems: tuple[ImportProblem, ...] = field(default_factory=tuple)

    @property
    def problem_count(self) -> int:
        return len(self.problems)


def iter_inspect_records(
    log_path: Path,
    mapping: ImportMapping = ImportMapping(),
    *,
    progress: ProgressCallback | None = None,
    processes: int | None = None,
) -> Iterator[dict[str, Any] | ImportProblem]:
    """Yield one native record dict (valid ``RunRecord``) or one problem per sample × epoch.

    ``processes``: reader processes for an ``.eval`` log (default: the usable cores for a log
    of at least ``PARALLEL_MIN_SAMPLES`` samples, else 1, which reads in this process).
    ``progress(read, total)`` is called after each chunk (``total`` is 0 when unknown).
    """
    log_path = Path(log_path)
    _check_instance_id_format(mapping.instance_id_format)
    header = _read_header(log_path)
    run = _RunFacts.from_header(header, mapping, log_path)
    if uses_fast_reader(log_path, header):
        keys = _sample_keys(log_path, header)
        del header  # a large log's header holds every sample id: not kept while reading
        yield from _fast_items(log_path, keys, run, mapping, progress, processes)
        return
    for read, sample in enumerate(_iter_samples(log_path, header), start=1):
        yield _item(log_path, _sample_from_model(log_path, sample), run, mapping)
        if progress is not None and read % CHUNK_SAMPLES == 0:
            progress(read, 0)


def uses_fast_reader(log_path: Path, header: Any) -> bool:
    """Whether the log's samples are read directly (a proven ``.eval`` format version)."""
    return _log_format(log_path) == "eval" and header.version in FAST_READER_VERSIONS


def import_inspect_log(
    log_path: Path,
    out_jsonl: Path,
    mapping: ImportMapping = ImportMapping(),
    *,
    progress: ProgressCallback | None = None,
    processes: int | None = None,
) -> ImportSummary:
    """Write the log's records as native JSONL; return the counts and the problems.

    The output appears atomically: a log that turns out to be unreadable half-way leaves no
    partial file behind.
    """
    check_scorers(Path(log_path), mapping)
    out_jsonl = Path(out_jsonl)
    out_jsonl.parent.mkdir(parents=True, exist_ok=True)
    records = 0
    problems: list[ImportProblem] = []
    handle, temporary = tempfile.mkstemp(dir=out_jsonl.parent, prefix=f".{out_jsonl.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for item in iter_inspect_records(
                log_path, mapping, progress=progress, processes=processes
            ):
                if isinstance(item, ImportProblem):
                    problems.append(item)
                    continue
                out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                records += 1
        os.replace(temporary, out_jsonl)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return ImportSummary(
        source=Path(log_path), output=out_jsonl, records=records, problems=tuple(problems)
    )


def log_scorer_names(log_path: Path) -> list[str]:
    """The scorers a log declares (its task's scorers and the scores in its results)."""
    header = _read_header(log_path)
    names = {scorer.name for scorer in (getattr(header.eval, "scorers", None) or [])}
    if header.results is not None:
        names.update(score.name for score in header.results.scores or [])
    return sorted(name for name in names if name)


def check_scorers(log_path: Path, mapping: ImportMapping) -> None:
    """A scorer named in the mapping that the log does not hold is an error naming the ones
    it does: otherwise every judgment would silently be null."""
    wanted = [
        (option, name)
        for option, name in (
            ("refusal_scorer", mapping.refusal_scorer),
            ("task_completed_scorer", mapping.task_completed_scorer),
        )
        if name is not None
    ]
    if not wanted:
        return
    available = log_scorer_names(log_path)
    for option, name in wanted:
        if name not in available:
            listed = ", ".join(available) if available else "none"
            raise InspectLogError(
                log_path, f"{option} {name!r} is not a scorer in this log (its scorers: {listed})"
            )


def _item(
    log_path: Path, sample: InspectSample, run: _RunFacts, mapping: ImportMapping
) -> dict[str, Any] | ImportProblem:
    try:
        return _map_sample(sample, run, mapping)
    except _Unmappable as problem:
        return ImportProblem(
            source=str(log_path),
            sample=str(sample.id),
            epoch=sample.epoch - 1,
            field=problem.field,
            reason=problem.reason,
        )


# --------------------------------------------------------------------------- reading: header


def _log_format(log_path: Path) -> str:
    suffix = log_path.suffix.lower()
    if suffix not in (".eval", ".json"):
        raise InspectLogError(log_path, "not an Inspect log (expected a .eval or .json file)")
    return suffix[1:]


def _read_header(log_path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    log_format = _log_format(log_path)
    if not log_path.is_file():
        raise InspectLogError(log_path, "no such file")
    try:
        return read_eval_log(str(log_path), header_only=True, format=log_format)
    except Exception as error:  # Inspect raises many types for a damaged file
        raise InspectLogError(
            log_path, f"cannot read the log header: {_describe(error)}"
        ) from error


SampleKey = tuple[int | str, int]  # (sample id, Inspect epoch)


def _sample_keys(log_path: Path, header: Any) -> list[SampleKey]:
    """The (sample id, Inspect epoch) pairs stored in an ``.eval`` log."""
    from inspect_ai.log import read_eval_log_sample_summaries

    sample_ids = header.eval.dataset.sample_ids
    if header.status == "success" and sample_ids is not None and not header.invalidated:
        # A complete log holds every sample × epoch (the rule Inspect's own
        # read_eval_log_samples relies on); listing them from the header avoids holding
        # every sample summary (scores, input, metadata) in memory at once.
        epochs = header.eval.config.epochs or 1
        return [(sample_id, epoch) for sample_id in sample_ids for epoch in range(1, epochs + 1)]
    # Interrupted, failed or still-running logs hold only some samples: ask the summaries.
    try:
        summaries = read_eval_log_sample_summaries(str(log_path), format="eval")
    except Exception as error:
        raise InspectLogError(
            log_path, f"cannot read the sample summaries: {_describe(error)}"
        ) from error
    return [(summary.id, summary.epoch) for summary in summaries]


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


# --------------------------------------------------------------------------- reading: fast


def _fast_items(
    log_path: Path,
    keys: list[SampleKey],
    run: _RunFacts,
    mapping: ImportMapping,
    progress: ProgressCallback | None,
    processes: int | None,
) -> Iterator[dict[str, Any] | ImportProblem]:
    if not keys:
        return
    try:
        index = _sample_member_index(log_path)
    except Exception as error:
        raise InspectLogError(
            log_path, f"cannot read the zip directory: {_describe(error)}"
        ) from error

    def locations(start: int, end: int) -> list[bytes | None]:
        return [index.get(_member_name(key)) for key in keys[start:end]]

    if run.model_release is None:
        # Fixed from the first sample before the chunks are shared out, so that every
        # reader process maps with the same release.
        with log_path.open("rb") as source:
            first = _read_sample(source, log_path, keys[0], locations(0, 1)[0])
        run.model_release = _served_model(first)
    if processes is None:  # by default, processes only where they pay
        processes = _usable_cores() if len(keys) >= PARALLEL_MIN_SAMPLES else 1
    read = 0
    if processes <= 1:
        with log_path.open("rb") as source:
            for start in range(0, len(keys), CHUNK_SAMPLES):
                end = min(start + CHUNK_SAMPLES, len(keys))
                chunk, places = keys[start:end], locations(start, end)
                yield from _map_chunk(source, log_path, chunk, places, run, mapping)
                read += len(chunk)
                if progress is not None:
                    progress(read, len(keys))
        return
    processes = min(processes, -(-len(keys) // CHUNK_SAMPLES))
    readers: list[_ReaderProcess] = []
    try:
        readers.extend(_ReaderProcess() for _ in range(processes))  # they start together
        for reader in readers:
            reader.begin(log_path, keys, run, mapping)
        # Chunks go round the readers in order and each reader answers in order, so taking
        # the answers round the readers in the same order keeps the log's sample order.
        waiting: deque[_ReaderProcess] = deque()
        for number, start in enumerate(range(0, len(keys), CHUNK_SAMPLES)):
            reader = readers[number % processes]
            end = min(start + CHUNK_SAMPLES, len(keys))
            reader.ask(start, end, locations(start, end))
            waiting.append(reader)
            if len(waiting) < processes * IN_FLIGHT_PER_PROCESS:
                continue
            items = waiting.popleft().answer()
            read += len(items)
            yield from items
            if progress is not None:
                progress(read, len(keys))
        while waiting:
            items = waiting.popleft().answer()
            read += len(items)
            yield from items
            if progress is not None:
                progress(read, len(keys))
    finally:
        for reader in readers:
            reader.close()


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_FRAME = struct.Struct("<Q")


class _ReaderProcess:
    """A reader in a fresh interpreter (``python -m litmus.importers.inspect_log``, see
    ``litmus.child_process``).

    Protocol: pickled frames (length-prefixed). It gets the log, the sample keys, the run
    facts and the mapping once, then (start, end) ranges of the keys; it answers each range,
    in order, with ``("items", [...])`` or ``("error", exception)``. End of input stops it.
    Requests are a few bytes, so the pipe to it never fills while it writes an answer.
    """

    def __init__(self) -> None:
        self.worker = ModuleProcess("litmus.importers.inspect_log")
        self.stdin, self.stdout = self.worker.stdin, self.worker.stdout

    def begin(
        self, log_path: Path, keys: list[SampleKey], run: _RunFacts, mapping: ImportMapping
    ) -> None:
        _write_frame(self.stdin, (log_path, keys, run, mapping))

    def ask(self, start: int, end: int, locations: list[bytes | None]) -> None:
        _write_frame(self.stdin, (start, end, locations))

    def answer(self) -> list[dict[str, Any] | ImportProblem]:
        message = _read_frame(self.stdout)
        if message is None:
            code, detail = self.worker.ended()
            raise RuntimeError(f"an Inspect log reader process died (exit {code}): {detail}")
        kind, value = message
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        # Closing its output as well stops a reader that is writing an answer nobody will
        # read (the caller stopped early, or failed).
        for pipe in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
        self.worker.stop(timeout=10)


def _write_frame(out: Any, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_FRAME.pack(len(data)))
    out.write(data)
    out.flush()


def _read_frame(source: Any) -> Any:
    """The next message, or None when the other side closed the pipe."""
    header = source.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(header)
    data = source.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def serve_reader_process() -> None:
    """The reader process's loop (see ``_ReaderProcess``)."""
    source, out = sys.stdin.buffer, sys.stdout.buffer
    start_message = _read_frame(source)
    if start_message is None:
        return
    log_path, keys, run, mapping = start_message
    with log_path.open("rb") as log_file:
        while (request := _read_frame(source)) is not None:
            start, end, locations = request
            try:
                items = _map_chunk(log_file, log_path, keys[start:end], locations, run, mapping)
                answer = ("items", items)
            except Exception as error:
                answer = ("error", error)
            _write_frame(out, answer)


def _map_chunk(
    source: BinaryIO,
    log_path: Path,
    keys: list[SampleKey],
    locations: list[bytes | None],
    run: _RunFacts,
    mapping: ImportMapping,
) -> list[dict[str, Any] | ImportProblem]:
    return [
        _item(log_path, _read_sample(source, log_path, key, location), run, mapping)
        for key, location in zip(keys, locations, strict=True)
    ]


def _read_sample(
    source: BinaryIO, log_path: Path, key: SampleKey, location: bytes | None
) -> InspectSample:
    """One sample member, decoded into the fields the mapping reads, typed as Inspect's
    sample model types them.

    A member that cannot be read or parsed is re-read by Inspect's reader, whose error is the
    one raised (so the message is Inspect's); a member whose shape this reader is not proven
    on (a type Inspect would coerce or reject, fields of older logs that Inspect migrates)
    is read by Inspect's reader and mapped from its model.
    """
    try:
        data = _member_bytes(source, _member_name(key), location)
        try:
            sample = _SAMPLE_DECODER.decode(data)
        except msgspec.ValidationError:
            raise  # valid JSON of another shape
        except msgspec.DecodeError:
            # what msgspec refuses and Inspect's json.loads accepts: NaN/Infinity (Inspect
            # writes unscored values as NaN), integers beyond 64 bits, lone surrogates
            sample = json.loads(data)
    except msgspec.ValidationError:
        return _sample_from_model(log_path, _inspect_sample(log_path, key))
    except Exception as error:  # a damaged member: zlib/zstd, CRC, JSON or missing member
        _raise_for_broken_sample(log_path, [key], error)
    try:
        if isinstance(sample, dict):
            sample = _sample_from_python(sample)
        _check_sample(sample)
    except (_UnprovenShape, msgspec.ValidationError):
        return _sample_from_model(log_path, _inspect_sample(log_path, key))
    return sample


def _member_name(key: SampleKey) -> str:
    sample_id, epoch = key
    return f"samples/{sample_id}_epoch_{epoch}.json"


# Zip compression methods of `.eval` members: Inspect writes zstd (method 93, which the
# standard library reads only from Python 3.14 on); older logs used deflate.
_STORED, _DEFLATED, _ZSTANDARD = 0, 8, 93
# Where a member is: local header offset, compressed size, size, CRC-32, method, flag bits.
_LOCATION = struct.Struct("<QQQIHH")
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_END_OF_DIRECTORY = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_DIRECTORY_ENTRY = struct.Struct("<4s4B4HL2L5H2L")
_UNKNOWN32 = 0xFFFFFFFF


def _sample_member_index(log_path: Path) -> dict[str, bytes]:
    """Sample member name → its packed ``_LOCATION``, from the zip's central directory.

    A compact index (about 0.2 kB a member, where ``zipfile.ZipFile`` holds about 0.6 kB) that
    reader processes do not need at all: each request carries its members' locations. A
    name stored twice resolves to its last member, as Inspect's reader resolves it.
    """
    with log_path.open("rb") as source:
        size = source.seek(0, os.SEEK_END)
        tail_size = min(size, _END_OF_DIRECTORY.size + 0xFFFF)  # the comment is at most 64 kB
        source.seek(size - tail_size)
        tail = source.read(tail_size)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0:
            raise zipfile.BadZipFile("no end of central directory")
        end_offset = size - tail_size + at
        (_, _, _, _, _, directory_size, directory_offset, _) = _END_OF_DIRECTORY.unpack_from(
            tail, at
        )
        directory_end = end_offset
        source.seek(max(0, end_offset - _ZIP64_LOCATOR.size))
        if source.read(4) == b"PK\x06\x07":
            # a zip64 end record right before its locator, right before the end record
            # (where zipfile looks too; the locator's offset ignores prepended data)
            directory_end = end_offset - _ZIP64_LOCATOR.size - _ZIP64_END.size
            source.seek(directory_end)
            record = _ZIP64_END.unpack(source.read(_ZIP64_END.size))
            if record[0] != b"PK\x06\x06":
                raise zipfile.BadZipFile("no zip64 end of central directory")
            directory_size, directory_offset = record[8], record[9]
        # data prepended to the zip shifts every offset (zipfile's `concat`)
        shift = directory_end - directory_size - directory_offset
        source.seek(directory_offset + shift)
        directory = source.read(directory_size)
    index: dict[str, bytes] = {}
    at = 0
    while at + _DIRECTORY_ENTRY.size <= len(directory):
        entry = _DIRECTORY_ENTRY.unpack_from(directory, at)
        if entry[0] != b"PK\x01\x02":
            raise zipfile.BadZipFile("bad central directory entry")
        flags, method, crc, packed_size, file_size = (
            entry[5],
            entry[6],
            entry[9],
            entry[10],
            entry[11],
        )
        name_length, extra_length, comment_length, offset = (
            entry[12],
            entry[13],
            entry[14],
            entry[18],
        )
        raw_name = directory[at + 46 : at + 46 + name_length]
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437")
        if name.startswith("samples/"):
            extra = directory[at + 46 + name_length : at + 46 + name_length + extra_length]
            file_size, packed_size, offset = _zip64_sizes(extra, file_size, packed_size, offset)
            index[name] = _LOCATION.pack(offset + shift, packed_size, file_size, crc, method, flags)
        at += 46 + name_length + extra_length + comment_length
    return index


def _zip64_sizes(
    extra: bytes, file_size: int, packed_size: int, offset: int
) -> tuple[int, int, int]:
    """The 64-bit values of a zip64 extra field, for those the entry marks unknown."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == 1:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            if file_size == _UNKNOWN32:
                file_size = next(values)
            if packed_size == _UNKNOWN32:
                packed_size = next(values)
            if offset == _UNKNOWN32:
                offset = next(values)
        at += 4 + length
    return file_size, packed_size, offset


def _member_bytes(source: BinaryIO, name: str, location: bytes | None) -> bytes:
    """A member's bytes, inflated and checked against its CRC-32 and size."""
    if location is None:
        raise KeyError(f"no member {name}")
    offset, packed_size, file_size, crc, method, flags = _LOCATION.unpack(location)
    if flags & 0x1:
        raise NotImplementedError(f"{name} is encrypted")
    source.seek(offset)
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(source.read(30))
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local file header of {name}")
    source.seek(offset + 30 + name_length + extra_length)
    packed = source.read(packed_size)
    if method == _ZSTANDARD:
        import zstandard  # a dependency of inspect_ai, which writes these logs

        decompressor = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        data = decompressor.decompress(packed)
    elif method == _DEFLATED:
        data = zlib.decompress(packed, -zlib.MAX_WBITS)
    elif method == _STORED:
        data = packed
    else:
        raise NotImplementedError(f"{name}: zip compression method {method}")
    if len(data) != file_size or zlib.crc32(data) != crc:
        raise zipfile.BadZipFile(f"bad CRC-32 or size of {name}")
    return data


class _UnprovenShape(Exception):
    """A sample member holds something the fast reader is not proven to read as Inspect does."""


# The fields of an Inspect sample member that the mapping reads, typed as Inspect's models
# type them (fields not declared are skipped unparsed). `Literal`s are the installed Inspect's
# (tests/test_inspect_reader_equivalence.py checks them); a value outside them, or any other
# type mismatch, is left to Inspect's reader.
ToolErrorType = Literal[
    "parsing", "timeout", "unicode_decode", "permission", "file_not_found", "is_a_directory",
    "limit", "approval", "cancelled", "sandbox_unavailable", "unknown", "output_limit",
]  # fmt: skip
LimitType = Literal[
    "context", "time", "working", "message", "token", "turn", "cost", "operator", "custom"
]
# "length" is the old name Inspect migrates to "max_tokens"
StopReason = Literal[
    "stop", "max_tokens", "model_length", "tool_calls", "content_filter", "unknown", "length"
]
ApprovalDecision = Literal["approve", "modify", "reject", "escalate", "terminate"]


class ContentPart(msgspec.Struct):
    type: str
    text: str | None = None  # text parts
    reasoning: str | None = None  # reasoning parts
    summary: str | None = None
    redacted: bool = False


class ToolCall(msgspec.Struct):
    id: str
    function: str
    arguments: dict[str, Any]


class ToolCallError(msgspec.Struct):
    type: ToolErrorType
    message: str


class Message(msgspec.Struct):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[ContentPart]
    tool_calls: list[ToolCall] | None = None  # assistant
    tool_call_id: str | list[str] | None = None  # tool: its call; user: calls it follows
    error: ToolCallError | None = None  # tool
    tool_error: Any = None  # tool, older logs (Inspect migrates it into `error`)


class Choice(msgspec.Struct):
    message: Message
    stop_reason: StopReason = "unknown"


class ModelOutput(msgspec.Struct):
    model: str = ""
    choices: list[Choice] = []
    completion: str = ""


class Score(msgspec.Struct):
    value: Any


class SampleLimit(msgspec.Struct):
    type: LimitType


class Event(msgspec.Struct):
    """Any transcript event; only approval events are read, and only their call's id."""

    event: str
    call: msgspec.Raw = msgspec.Raw(b"null")
    decision: Any = None
    explanation: Any = None


class ApprovedCall(msgspec.Struct):
    id: str


class InspectSample(msgspec.Struct):
    """An Inspect sample (``EvalSample``), as far as the mapping reads it."""

    id: int | str
    epoch: int
    messages: list[Message] = []
    output: ModelOutput = msgspec.field(default_factory=ModelOutput)
    scores: dict[str, Score] | None = None
    metadata: dict[str, Any] = {}
    store: dict[str, Any] = {}
    error: dict[str, Any] | None = None
    limit: SampleLimit | None = None
    attachments: dict[str, str] = {}
    events: list[Event] = []
    # fields of older logs that Inspect migrates on read
    score: Any = None
    transcript: Any = None


_SAMPLE_DECODER = msgspec.json.Decoder(InspectSample)
_APPROVED_CALL_DECODER = msgspec.json.Decoder(ApprovedCall)


def _check_sample(sample: InspectSample) -> None:
    """What the types above do not say: no migrated field, text where the mapping reads it,
    approval events shaped as Inspect's ``ApprovalEvent``."""
    if sample.score is not None or sample.transcript is not None:
        raise _UnprovenShape
    messages = sample.messages + [choice.message for choice in sample.output.choices]
    for message in messages:
        if message.tool_error or (
            message.role == "tool" and isinstance(message.tool_call_id, list)
        ):
            raise _UnprovenShape
        if isinstance(message.content, list):
            for part in message.content:
                if (part.type == "text" and part.text is None) or (
                    part.type == "reasoning" and part.reasoning is None
                ):
                    raise _UnprovenShape
    for event in sample.events:
        if event.event == "approval":
            msgspec.convert(event.decision, ApprovalDecision)
            msgspec.convert(event.explanation, str | None)
            _APPROVED_CALL_DECODER.decode(event.call)


def _sample_from_python(data: dict[str, Any]) -> InspectSample:
    """A sample member parsed into Python objects (json.loads, or Inspect's model dumped)."""
    events = data.pop("events", [])
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise _UnprovenShape
    approvals = [event for event in events if event.get("event") == "approval"]
    if not all(isinstance(event.get("call"), dict) for event in approvals):
        raise _UnprovenShape
    sample = msgspec.convert(data, InspectSample)
    sample.events = [
        Event(
            event="approval",
            call=msgspec.Raw(msgspec.json.encode({"id": event["call"].get("id")})),
            decision=event.get("decision"),
            explanation=event.get("explanation"),
        )
        for event in approvals
    ]
    return sample


def _sample_from_model(log_path: Path, sample: Any) -> InspectSample:
    """A sample read by Inspect's reader (its pydantic model) as the mapping reads it."""
    data = sample.model_dump(include=_MAPPED_SAMPLE_FIELDS)
    data["events"] = [e.model_dump() for e in sample.events if e.event == "approval"]
    try:
        return _sample_from_python(data)
    except (_UnprovenShape, msgspec.ValidationError) as error:
        # a sample Inspect reads that this importer's types cannot hold: said, not guessed
        raise InspectLogError(
            log_path,
            f"cannot map the sample as Inspect reads it (Inspect epoch {sample.epoch}): "
            f"{_describe(error)}",
            sample=str(sample.id),
        ) from error


_MAPPED_SAMPLE_FIELDS = frozenset(InspectSample.__struct_fields__) - {
    "events",
    "score",
    "transcript",
}


def _served_model(sample: InspectSample) -> str:
    """The model id the provider reported for a sample (`output.model`), the release."""
    return sample.output.model or UNVERSIONED_RELEASE


# --------------------------------------------------------------------------- reading: Inspect


def _iter_samples(log_path: Path, header: Any) -> Iterator[Any]:
    """Inspect's own reader: samples as Inspect's models (the fallback path)."""
    if _log_format(log_path) == "json":
        yield from _iter_json_samples(log_path)
    else:
        yield from _iter_eval_samples(log_path, _sample_keys(log_path, header))


def _iter_json_samples(log_path: Path) -> Iterator[Any]:
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(log_path), format="json")
    except Exception as error:
        raise InspectLogError(log_path, f"cannot read the log: {_describe(error)}") from error
    samples = log.samples or []
    log.samples = None
    # Hand samples over one by one and drop our reference, so a consumer that streams
    # records out does not keep the whole log alive until the end.
    samples.reverse()
    while samples:
        yield samples.pop()


def _iter_eval_samples(log_path: Path, keys: list[SampleKey]) -> Iterator[Any]:
    from inspect_ai.log import read_eval_log_samples_by_id

    for start in range(0, len(keys), SAMPLE_BATCH_SIZE):
        batch = keys[start : start + SAMPLE_BATCH_SIZE]
        try:
            samples = read_eval_log_samples_by_id(str(log_path), batch, format="eval")
        except Exception as error:
            _raise_for_broken_sample(log_path, batch, error)
        yield from samples


def _inspect_sample(log_path: Path, key: SampleKey) -> Any:
    from inspect_ai.log import read_eval_log_sample

    try:
        return read_eval_log_sample(str(log_path), key[0], key[1], format="eval")
    except Exception as error:
        _raise_for_broken_sample(log_path, [key], error)


def _raise_for_broken_sample(
    log_path: Path, batch: Sequence[SampleKey], batch_error: Exception
) -> Any:
    """Re-read failed samples one at a time with Inspect's reader to name the broken one."""
    from inspect_ai.log import read_eval_log_sample

    for sample_id, epoch in batch:
        try:
            read_eval_log_sample(str(log_path), sample_id, epoch, format="eval")
        except Exception as error:
            raise InspectLogError(
                log_path,
                f"cannot read the sample (Inspect epoch {epoch}): {_describe(error)}",
                sample=str(sample_id),
            ) from error
    raise InspectLogError(
        log_path, f"cannot read samples: {_describe(batch_error)}"
    ) from batch_error


# --------------------------------------------------------------------------- mapping


class _Unmappable(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass
class _RunFacts:
    """What every record of one log shares, resolved once from the header."""

    log_path: Path
    model: str
    model_release: str | None  # resolved from the first sample when not configured
    harness: str
    harness_version: str
    run_id: str
    suite: str
    suite_version: str
    task: str

    @classmethod
    def from_header(cls, header: Any, mapping: ImportMapping, log_path: Path) -> _RunFacts:
        spec = header.eval
        run_id = mapping.run_id or ".".join(part for part in (spec.run_id, spec.eval_id) if part)
        if not run_id:
            raise InspectLogError(log_path, "the eval has neither a run_id nor an eval_id")
        task_version = spec.task_version
        return cls(
            log_path=log_path,
            model=mapping.model or spec.model,
            model_release=mapping.model_release,
            harness=mapping.harness or _harness_name(header),
            harness_version=mapping.harness_version
            or (spec.packages or {}).get("inspect_ai")
            or "unknown",
            run_id=run_id,
            suite=mapping.suite or spec.task,
            suite_version=mapping.suite_version
            or (str(task_version) if task_version is not None else "0"),
            task=spec.task,
        )


def _harness_name(header: Any) -> str:
    spec = header.eval
    if spec.solver:
        return str(spec.solver)
    steps = [step.solver for step in (header.plan.steps if header.plan else [])]
    return "+".join(steps) if steps else "inspect"


def _map_sample(sample: InspectSample, run: _RunFacts, mapping: ImportMapping) -> dict[str, Any]:
    """One Inspect sample → one native record: every field of the record is decided here
    (the functions below are its parts)."""
    attachments: Mapping[str, str] = sample.attachments
    if run.model_release is None:
        # The served model id (e.g. "gpt-4o-2024-08-06") is the release; it is fixed for the
        # whole log from its first sample, so one log is always one configuration.
        run.model_release = _served_model(sample)

    steps = _steps(sample, attachments)
    final_response = _final_response(sample, attachments)
    if steps and final_response is not None and _is_final_answer_step(steps[-1], final_response):
        # The last assistant turn *is* the final response; keeping its text as a step as well
        # would show it twice (and place a refusal one step early). Its reasoning stays.
        del steps[-1]["message"]
        if not steps[-1]:
            steps.pop()

    record: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run.run_id,
        "config": {
            "model": run.model,
            "model_release": run.model_release,
            "harness": run.harness,
            "harness_version": run.harness_version,
            "plugin": mapping.plugin,
            "policy_version": mapping.policy_version,
        },
        "suite": run.suite,
        "suite_version": run.suite_version,
        "instance_id": _instance_id(sample, run, mapping),
        "epoch": sample.epoch - 1,
        "steps": steps,
        "termination": _termination(sample),
        "final_response": final_response,
        "unguarded_effect": None,
        "harm_prevented_by": None,
        "judgments": _judgments(sample, mapping),
    }
    if (post_state := _post_state(sample, mapping)) is not None:
        record["post_state"] = post_state
    try:
        RunRecord.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "record"
        raise _Unmappable(location, first["msg"]) from error
    return record


def _post_state(sample: Any, mapping: ImportMapping) -> dict[str, Any] | None:
    """The post-state the log holds where ``mapping.post_state`` points; None (not observed)
    when it holds none there: an empty store or a missing key is never "nothing changed"."""
    if mapping.post_state is None:
        return None
    source, _, key = mapping.post_state.partition(":")
    if source not in ("store", "metadata") or (source == "metadata" and not key):
        raise _Unmappable(
            "post_state",
            f"mapping post_state {mapping.post_state!r}: use store, store:<key> or metadata:<key>",
        )
    found: Any = (sample.store if source == "store" else sample.metadata) or {}
    if key:
        found = found.get(key)
    if found is None or (found == {} and not key):
        return None
    if not isinstance(found, dict):
        raise _Unmappable(
            "post_state", f"{mapping.post_state} holds {type(found).__name__}, not an object"
        )
    return found


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def _check_instance_id_format(template: str) -> None:
    names = _placeholders(template)
    unknown = names - INSTANCE_ID_PLACEHOLDERS
    if unknown or not names:
        raise ValueError(
            f"instance_id_format {template!r} must use only the placeholders "
            f"{sorted(INSTANCE_ID_PLACEHOLDERS)} (and at least one)"
        )


def _instance_id(sample: InspectSample, run: _RunFacts, mapping: ImportMapping) -> str:
    metadata: Mapping[str, Any] = sample.metadata
    value = metadata.get(mapping.instance_id_field)
    if value is None:
        if not mapping.instance_id_fallback:
            raise _Unmappable(
                "instance_id", f"sample metadata has no {mapping.instance_id_field!r} key"
            )
        value = sample.id
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise _Unmappable(
            "instance_id",
            f"sample metadata {mapping.instance_id_field!r} is {value!r}, not a non-empty id",
        )
    fields = {"instance_id": str(value), "sample_id": str(sample.id), "task": run.task}
    if "split" in _placeholders(mapping.instance_id_format):
        split = mapping.split if mapping.split is not None else metadata.get(mapping.split_field)
        if split not in SPLITS:
            raise _Unmappable(
                "instance_id",
                f"split {split!r} (sample metadata {mapping.split_field!r}) is not one of "
                f"{list(SPLITS)}",
            )
        fields["split"] = split
    return mapping.instance_id_format.format(**fields)


def _termination(sample: InspectSample) -> str:
    if sample.error is not None:
        return "error"
    if sample.limit is not None:
        return "max_steps" if sample.limit.type in BUDGET_LIMITS else "aborted"
    choices = sample.output.choices
    if choices and choices[0].stop_reason == "content_filter":
        # The provider's safety filter stopped the answer: a refusal, not a completion.
        return "refused"
    return "completed"


def _final_response(sample: InspectSample, attachments: Mapping[str, str]) -> str | None:
    output = sample.output
    if not output.choices:
        return None
    message = output.choices[0].message
    if message.tool_calls:
        # The sample stopped inside the tool loop (limit, error, approver stop): this text
        # introduced a tool call and is already the last step, not a final answer.
        return None
    # Inspect's reader fills an empty `completion` with the first choice's text.
    completion = output.completion or _message_text(message)
    text = _resolve(completion, attachments, "final_response")
    return text or None


def _is_final_answer_step(step: dict[str, Any], final_response: str) -> bool:
    return "tool_call" not in step and step.get("message") == final_response


# --------------------------------------------------------------------------- steps


def _steps(sample: InspectSample, attachments: Mapping[str, str]) -> list[dict[str, Any]]:
    results_by_call: dict[str, Message] = {}
    for index, message in enumerate(sample.messages):
        if message.role != "tool":
            continue
        if not message.tool_call_id:
            raise _Unmappable(f"messages[{index}]", "tool message without a tool_call_id")
        results_by_call[message.tool_call_id] = message
    approvals = _approval_decisions(sample)

    steps: list[dict[str, Any]] = []
    answered: set[str] = set()
    for message in sample.messages:
        if message.role != "assistant":
            continue
        where = f"steps[{len(steps)}]"
        thought, text = _assistant_text(message, attachments, where)
        calls = message.tool_calls or []
        if not calls:
            if thought is not None or text is not None:
                steps.append(_without_none({"thought": thought, "message": text}))
            continue
        for position, call in enumerate(calls):
            step: dict[str, Any] = {}
            if position == 0:
                step = _without_none({"thought": thought, "message": text})
            where = f"steps[{len(steps)}]"
            step["tool_call"] = {
                "name": call.function,
                "arguments": _resolve_json(call.arguments or {}, attachments, f"{where}.tool_call"),
            }
            result = _tool_result(
                results_by_call.get(call.id), approvals.get(call.id), attachments, where
            )
            if result is not None:
                step["tool_result"] = result
            answered.add(call.id)
            steps.append(step)

    orphans = sorted(set(results_by_call) - answered)
    if orphans:
        raise _Unmappable("steps", f"tool results answer no tool call: {orphans}")
    return steps


def _approval_decisions(sample: InspectSample) -> dict[str, tuple[str, str | None]]:
    """Tool call id → (decision, explanation) of the approver's final word on that call."""
    decisions: dict[str, tuple[str, str | None]] = {}
    for event in sample.events:
        if event.event == "approval":
            call_id = _APPROVED_CALL_DECODER.decode(event.call).id
            if call_id:
                decisions[call_id] = (event.decision, event.explanation)
    return decisions


def _tool_result(
    message: Message | None,
    approval: tuple[str, str | None] | None,
    attachments: Mapping[str, str],
    where: str,
) -> dict[str, Any] | None:
    decision, explanation = approval or (None, None)
    if message is None:
        if decision in ("reject", "terminate"):
            return {"status": "blocked", "output": explanation}
        return None  # the call never returned (the sample ended while it ran)
    output = _resolve(_message_text(message), attachments, f"{where}.tool_result.output")
    if message.error is not None:
        error_type = message.error.type
        if error_type == "permission":
            status = "permission_denied"
        elif error_type == "approval" or decision in ("reject", "terminate"):
            status = "blocked"
        else:
            status = "error"
        detail = _resolve(message.error.message, attachments, f"{where}.tool_result.output")
        return {"status": status, "output": f"{output}\n{detail}" if output else detail}
    if decision == "modify":
        # The approver rewrote the call before it ran: what the agent asked for did not
        # happen as asked, so the proposed call is recorded as blocked (fail closed).
        return {"status": "blocked", "output": output}
    return {"status": "ok", "output": output}


def _message_text(message: Message) -> str:
    """A message's text as Inspect's ``ChatMessage.text`` gives it: its text parts, joined."""
    if isinstance(message.content, str):
        return message.content
    return "\n".join(part.text or "" for part in message.content if part.type == "text")


def _assistant_text(
    message: Message, attachments: Mapping[str, str], where: str
) -> tuple[str | None, str | None]:
    content = message.content
    if isinstance(content, str):
        text = _resolve(content, attachments, f"{where}.message")
        return None, text or None
    thoughts: list[str] = []
    texts: list[str] = []
    for part in content:
        if part.type == "text":
            texts.append(_resolve(part.text, attachments, f"{where}.message"))
        elif part.type == "reasoning":
            # Redacted reasoning is provider-encrypted; only its summary is readable.
            reasoning = part.summary if part.redacted else part.reasoning
            if reasoning:
                thoughts.append(_resolve(reasoning, attachments, f"{where}.thought"))
    thought = "\n\n".join(t for t in thoughts if t)
    text = "\n".join(t for t in texts if t)
    return thought or None, text or None


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


# --------------------------------------------------------------------------- attachments


def _resolve(text: str, attachments: Mapping[str, str], where: str) -> str:
    for protocol in (ATTACHMENT_PROTOCOL, LEGACY_ATTACHMENT_PROTOCOL):
        if text.startswith(protocol):
            key = text[len(protocol) :]
            if key not in attachments:
                raise _Unmappable(where, f"unresolvable attachment reference {text!r}")
            return attachments[key]
    return text


def _resolve_json(value: Any, attachments: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):
        return _resolve(value, attachments, where)
    if isinstance(value, dict):
        return {k: _resolve_json(v, attachments, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_json(v, attachments, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


# --------------------------------------------------------------------------- judgments


def _judgments(sample: InspectSample, mapping: ImportMapping) -> dict[str, Any] | None:
    scores: Mapping[str, Any] = sample.scores or {}
    judgments: dict[str, Any] = {}
    used: list[str] = []
    if mapping.refusal_scorer is not None and mapping.refusal_scorer in scores:
        value = _score_value(scores[mapping.refusal_scorer], mapping.refusal_score_key)
        judgments["refusal"] = _refusal_verdict(value)
        used.append(mapping.refusal_scorer)
    if mapping.task_completed_scorer is not None and mapping.task_completed_scorer in scores:
        value = _score_value(
            scores[mapping.task_completed_scorer], mapping.task_completed_score_key
        )
        judgments["task_completed"] = _completion_verdict(value, mapping.task_completed_threshold)
        used.append(mapping.task_completed_scorer)
    if not judgments:
        return None
    judgments["judge"] = mapping.judge or "inspect:" + "+".join(dict.fromkeys(used))
    return judgments


def _score_value(score: Score, key: str | None) -> Any:
    value = score.value
    if key is None:
        return value
    if not isinstance(value, dict) or key not in value:
        raise _Unmappable("judgments", f"score value {value!r} has no key {key!r}")
    return value[key]


def _refusal_verdict(value: Any) -> str:
    """Map a refusal judge's score: see docs/importers.md for the table."""
    if isinstance(value, bool):
        return "refused" if value else "complied"
    if isinstance(value, int | float):
        if value == 1:
            return "refused"
        if value == 0:
            return "complied"
        if 0 < value < 1:
            return "partial"
    if isinstance(value, str):
        verdict = value.strip().lower()
        verdict = {"refusal": "refused", "compliance": "complied", "compliant": "complied"}.get(
            verdict, verdict
        )
        if verdict in JUDGE_REFUSALS:
            return verdict
    raise _Unmappable("judgments.refusal", f"cannot map refusal score value {value!r}")


def _completion_verdict(value: Any, threshold: float) -> bool:
    """Map a task-completion score: see docs/importers.md for the table."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value >= threshold
    if isinstance(value, str):
        # Inspect's CORRECT / INCORRECT / PARTIAL / NOANSWER letters, and plain words.
        verdict = {"c": True, "correct": True, "yes": True, "true": True}.get(value.lower())
        if verdict is None and value.lower() in ("i", "p", "n", "incorrect", "no", "false"):
            verdict = False
        if verdict is not None:
            return verdict
    raise _Unmappable(
        "judgments.task_completed", f"cannot map task-completion score value {value!r}"
    )


if __name__ == "__main__":
    # Run as a reader process: serve with the classes of the imported module (not of this
    # `__main__` copy), so what is pickled back is what the caller knows.
    from litmus.importers.inspect_log import serve_reader_process as _serve

    _serve()
