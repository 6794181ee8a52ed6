"""Loading suites (SPEC §3): validation, sibling consistency, and the warehouse oracle tables."""

from __future__ import annotations

import codecs
import gc
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import accumulate
from operator import attrgetter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from pydantic import ValidationError

from litmus.errors import SuiteError
from litmus.formats import SPLIT_HARM_CLASS, SPLITS, Family, StateMatcher, Suite
from litmus.globmatch import equality_json, translate_glob_both
from litmus.warehouse import atomically, serialized

_PATTERN_STRUCT = pa.struct(
    [
        ("arg_key", pa.string()),
        ("pattern", pa.string()),
        ("glob_pattern", pa.string()),
        ("regex_pattern", pa.string()),
    ]
)
_ARROW_SCHEMAS = {
    "oracle_matchers": pa.schema(
        [
            ("instance_id", pa.string()),
            ("kind", pa.string()),
            ("matcher_idx", pa.int32()),
            ("tool", pa.string()),
            ("arg_patterns", pa.list_(_PATTERN_STRUCT)),
        ]
    ),
    "state_matchers": pa.schema(
        [
            ("instance_id", pa.string()),
            ("kind", pa.string()),
            ("matcher_idx", pa.int32()),
            ("path", pa.string()),
            ("operator", pa.string()),
            ("expected_json", pa.string()),
            ("expected_string", pa.string()),
            ("pattern", pa.string()),
            ("glob_pattern", pa.string()),
            ("regex_pattern", pa.string()),
        ]
    ),
}


def format_location(loc: tuple[int | str, ...]) -> str:
    """Pydantic's error location as a readable path: ``families[3].instances[0].split``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


class DuplicateKeyError(ValueError):
    """A JSON object names one key twice; which value wins is the parser's whim."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in one JSON object")
        self.key = key


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads`` that refuses duplicate keys."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKeyError(key)
        seen[key] = value
    return seen


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector off while a large suite is built (and on again after).

    Parsing and validating a suite allocates millions of containers and none of them are
    garbage, yet each allocation burst triggers a collection that walks every one of them:
    125,000 instances parse and validate in about a tenth of the time without it (issue 16).
    Reference counting still frees everything that is dropped; only cycles wait for the end.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_suite_bytes(data: bytes, source: str) -> Suite:
    with cyclic_gc_paused():
        return _parse_suite_bytes(data, source)


def _parse_suite_bytes(data: bytes, source: str) -> Suite:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteError(source, "<file>", f"not valid UTF-8 at byte {exc.start}") from None
    if source.endswith((".yaml", ".yml")):
        import yaml

        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SuiteError(source, "<file>", f"invalid YAML: {exc}") from None
    else:
        try:
            raw = json.loads(text, object_pairs_hook=reject_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise SuiteError(
                source, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}"
            ) from None
        except ValueError as exc:
            raise SuiteError(source, "<file>", str(exc)) from None
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise SuiteError(source, format_location(first["loc"]), first["msg"]) from None
    check_suite_structure(suite, source)
    return suite


def load_suite_file(path: Path) -> Suite:
    return parse_suite_bytes(path.read_bytes(), str(path))


@dataclass(frozen=True)
class SuiteFileOutcome:
    """What ``store_suite_file`` did with one suite file."""

    suite: str
    suite_version: str
    stored: bool  # False: the same content was already in the warehouse
    complete_siblings: bool
    sibling_policy: str

    @property
    def key(self) -> str:
        return f"{self.suite}@{self.suite_version}"


def _file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _stored_suite_of_file(con: duckdb.DuckDBPyConnection, digest: str) -> SuiteFileOutcome | None:
    """The stored suite a file with these exact bytes was stored as, if it still is."""
    known = con.execute(
        "SELECT s.suite, s.suite_version, s.complete_siblings, "
        "coalesce(s.sibling_policy, 'complete') FROM suite_files f "
        "JOIN suites s USING (suite, suite_version) WHERE f.file_sha256 = ?",
        [digest],
    ).fetchall()
    if not known:
        return None
    suite_name, version, complete, policy = known[0]
    return SuiteFileOutcome(suite_name, version, False, bool(complete), str(policy))


def unstored_suite_files(con: duckdb.DuckDBPyConnection, paths: Sequence[Path]) -> list[Path]:
    """The files of ``paths`` whose exact bytes the warehouse has not stored as a suite it
    still holds: only these can be malformed or clash with a stored suite, since the others
    were validated and stored before and a stored (suite, version) is immutable."""
    return [path for path in paths if _stored_suite_of_file(con, _file_sha256(path)) is None]


def may_clash_with_stored(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether the suite file ``path`` could clash with a suite the warehouse stores: the
    suite and version its top level names before ``families`` are stored, or that top level
    cannot be read without a whole parse (YAML, fields after the families, a malformed
    start: the whole parse then decides, and words any error)."""
    if path.name.endswith((".yaml", ".yml")):
        return True
    try:
        top = _fields_before_families(path)
    except (_NotStreamable, ValueError, OSError):
        return True
    suite, version = top.get("suite"), top.get("suite_version")
    if not isinstance(suite, str) or not isinstance(version, str):
        return True
    return _version_stored(con, suite, version)


def _version_stored(con: duckdb.DuckDBPyConnection, suite: str, version: str) -> bool:
    """Whether the warehouse stores a suite under this name and version."""
    [(stored,)] = con.execute(
        "SELECT count(*) FROM suites WHERE suite = ? AND suite_version = ?", [suite, version]
    ).fetchall()
    return stored > 0


def store_suite_file(con: duckdb.DuckDBPyConnection, path: Path) -> SuiteFileOutcome:
    """Validate and store one suite file, unless these exact bytes were stored before.

    A file whose SHA-256 is recorded in ``suite_files`` (and whose suite is still stored)
    was validated and stored by an earlier run; a (suite, version) is immutable, so parsing
    it again could only confirm that. Any other file goes through ``store_suite``.
    """
    digest = _file_sha256(path)
    # one writer at a time checks and stores suites: two writers of a lake (no keys) would
    # both find a new version unstored and both store it
    with serialized(con, "suites"):
        if known := _stored_suite_of_file(con, digest):
            return known
        if path.stat().st_size >= STREAM_MIN_BYTES and not path.name.endswith((".yaml", ".yml")):
            outcome = stream_suite_json(con, path, path.name, digest)
        else:
            outcome = _store_whole_file(con, path, path.name, digest)
        con.execute(
            "INSERT INTO suite_files SELECT ?, ?, ?, ? "
            "WHERE NOT EXISTS (SELECT 1 FROM suite_files WHERE file_sha256 = ?)",
            [
                digest,
                outcome.suite,
                outcome.suite_version,
                datetime.now(UTC).replace(tzinfo=None),
                digest,
            ],
        )
        return outcome


@dataclass(frozen=True)
class SiblingProblem:
    family_id: str
    missing: tuple[str, ...]


def check_suite_structure(suite: Suite, source: str) -> None:
    """Errors that make a suite ambiguous to score: duplicate ids, a split held twice."""
    instance_ids: Counter[str] = Counter()
    family_ids: Counter[str] = Counter(f.family_id for f in suite.families)
    for family_id, count in family_ids.items():
        if count > 1:
            raise SuiteError(source, "families", f"family_id {family_id!r} appears {count} times")
    for f_index, family in enumerate(suite.families):
        splits = Counter(i.split for i in family.instances)
        for split, count in splits.items():
            if count > 1:
                raise SuiteError(
                    source,
                    f"families[{f_index}].instances",
                    f"family {family.family_id!r} holds split {split!r} {count} times",
                )
        instance_ids.update(i.instance_id for i in family.instances)
    for instance_id, count in instance_ids.items():
        if count > 1:
            raise SuiteError(
                source, "instances", f"instance_id {instance_id!r} appears {count} times"
            )
    held = {i.split for f in suite.families for i in f.instances}
    if unheld := unheld_runnable_splits(suite.runnable_splits, held):
        raise SuiteError(source, "runnable_splits", unheld)


def unheld_runnable_splits(runnable: Sequence[str] | None, held: Collection[str]) -> str | None:
    """Why a suite's ``runnable_splits`` cannot be run, or None: a split no family holds
    would leave nothing to cover."""
    missing = [split for split in runnable or () if split not in held]
    if not missing:
        return None
    return f"names split(s) {', '.join(missing)} that no family of the suite holds"


def sibling_problems(suite: Suite) -> list[SiblingProblem]:
    """Families that do not hold all four sibling splits (a structural gate under 'complete')."""
    problems = []
    for family in suite.families:
        present = {i.split for i in family.instances}
        missing = tuple(s for s in SPLITS if s not in present)
        if missing:
            problems.append(SiblingProblem(family.family_id, missing))
    return problems


def oracle_less_harmful_instances(suite: Suite) -> list[str]:
    """Harmful instances that declare no prohibited effect (SPEC §5, "Instances without an
    oracle"): accepted, but their attempts are unknown, so any trajectory that executed a tool
    call goes to audit instead of earning a safe label."""
    return [
        instance.instance_id
        for family in suite.families
        for instance in family.instances
        if instance.harm_class == "harmful"
        and not instance.prohibited_effects
        and not instance.prohibited_states
    ]


def oracle_less_warning(suite: Suite) -> str | None:
    """The warning that names how many harmful instances have no oracle, or None."""
    missing = oracle_less_harmful_instances(suite)
    if not missing:
        return None
    n_harmful = sum(1 for f in suite.families for i in f.instances if i.harm_class == "harmful")
    return (
        f"suite {suite.suite}@{suite.suite_version}: {len(missing)} of {n_harmful} harmful "
        "instance(s) declare no prohibited effect or state (no oracle): their trajectories are "
        "labeled safe only when the agent executed no tool call that returned ok; the rest "
        "go to audit (SPEC §5)"
    )


def stored_oracle_less_counts(
    con: duckdb.DuckDBPyConnection,
) -> dict[str, tuple[int, int]]:
    """suite@version → (oracle-less harmful instances, harmful instances), for every stored
    suite that has such instances."""
    rows = con.execute(
        """
        SELECT suite || '@' || suite_version,
               count(*) FILTER (WHERE request_harm_class = 'harmful' AND n_prohibited = 0
                                  AND n_prohibited_states = 0),
               count(*) FILTER (WHERE request_harm_class = 'harmful')
        FROM suite_instances GROUP BY 1
        HAVING count(*) FILTER (WHERE request_harm_class = 'harmful' AND n_prohibited = 0
                                AND n_prohibited_states = 0) > 0
        ORDER BY 1
        """
    ).fetchall()
    return {key: (int(missing), int(harmful)) for key, missing, harmful in rows}


def stored_oracle_less_warnings(
    con: duckdb.DuckDBPyConnection, only: Collection[str] | None = None
) -> list[str]:
    """The oracle-less warning for every stored suite (of ``only``, suite@version keys, when
    given) that has such instances."""
    return [
        f"suite {key}: {missing} of {harmful} harmful instance(s) declare no "
        "prohibited effect (no oracle): their trajectories are labeled safe only when the agent "
        "executed no tool call that returned ok; the rest go to audit (SPEC §5)"
        for key, (missing, harmful) in stored_oracle_less_counts(con).items()
        if only is None or key in only
    ]


def suite_hash(suite: Suite) -> str:
    """SHA-256 of the suite's canonical JSON: ``model_dump(mode="json")`` with keys sorted,
    compact, each public family without its ``private`` flag (``_SuiteDigest``)."""
    with cyclic_gc_paused():
        digest = _SuiteDigest(suite.description)
        for family in suite.families:
            digest.add(family)
        return digest.hexdigest(suite.model_dump(mode="json", exclude={"families"}))


# json.dumps(_, sort_keys=True, separators=(",", ":")), its encoder built once rather than
# once a family
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_HEAD_FIELDS = frozenset({"description", "families"})
# Top-level fields added after suites were first stored: a suite that leaves one out hashes as
# it did before the field existed (a stored suite is not a clash with itself).
_NEW_OPTIONAL_FIELDS = frozenset({"runnable_splits"})


class _SuiteDigest:
    """``suite_hash`` written family by family, so a streamed suite need not be held whole.

    The canonical text is ``json.dumps(document, sort_keys=True, separators=(",", ":"))``
    of the suite's ``model_dump(mode="json")``; sorted, its keys are ``description``,
    ``families`` and then the rest, so the text is the description, each family's own
    canonical text joined by commas, and the remaining fields, which may be known only at
    the end. One family at a time, right after it is validated, is also the faster way (a
    batch of 2,000 families validated, dumped and encoded in one call each took longer, in
    all three: presumably the CPU's caches; issue 16).
    """

    def __init__(self, description: str | None) -> None:
        self._sha = hashlib.sha256()
        head = _CANONICAL_JSON.encode({"description": description})[:-1]
        self._sha.update(head.encode() + b',"families":[')
        self._separator = b""

    def add(self, family: Family) -> None:
        document = family.model_dump(mode="json")
        _drop_public_flag(document)
        _drop_empty_state_oracles(document)
        self._sha.update(self._separator + _CANONICAL_JSON.encode(document).encode())
        self._separator = b","

    def hexdigest(self, top_level: dict[str, Any]) -> str:
        """The digest, given the top-level fields as ``model_dump(mode="json")`` has them
        (``families`` and ``description``, if there, are left out)."""
        rest = {
            name: value
            for name, value in top_level.items()
            if name not in _HEAD_FIELDS and not (name in _NEW_OPTIONAL_FIELDS and value is None)
        }
        tail = _CANONICAL_JSON.encode(rest)[1:]
        sha = self._sha.copy()
        sha.update((b"]," if rest else b"]") + tail.encode())
        return sha.hexdigest()


_STATE_ORACLE_FIELDS = ("prohibited_states", "completion_states")


def _drop_empty_state_oracles(family_document: dict[str, Any]) -> None:
    """An instance without a post-state oracle hashes as it did before instances could
    declare one: a stored suite keeps its hash (and is not a clash with itself)."""
    for instance in family_document["instances"]:
        for name in _STATE_ORACLE_FIELDS:
            if not instance[name]:
                del instance[name]


def _drop_public_flag(family_document: dict[str, Any]) -> None:
    # A family that is not private hashes as before the flag existed, so suites stored
    # earlier keep their digest (and their configurations their fingerprints).
    if not family_document.get("private"):
        family_document.pop("private", None)


def stored_suite_clash(con: duckdb.DuckDBPyConnection, suite: Suite) -> str | None:
    """Why ``suite`` cannot be stored beside what the warehouse holds (None: it can): the
    same (suite, version) with different content. Checked before any work starts."""
    existing = con.execute(
        "SELECT suite_hash, source_name, n_families FROM suites "
        "WHERE suite = ? AND suite_version = ?",
        [suite.suite, suite.suite_version],
    ).fetchall()
    if not existing or existing[0][0] == suite_hash(suite):
        return None
    return (
        f"suite {suite.suite}@{suite.suite_version} ({len(suite.families)} families) is already "
        f"stored with different content ({existing[0][2]} families, from {existing[0][1]}); "
        "publish changes under a new suite_version"
    )


def store_suite(con: duckdb.DuckDBPyConnection, suite: Suite, source_name: str) -> bool:
    """Write the suite and its oracle tables. Returns False when it was already stored.

    A (suite, version) is immutable: the same content again is a no-op, different content
    under a version already stored is an error, because stored labels were computed from it.
    """
    with cyclic_gc_paused():
        return _store_suite(con, suite, source_name)


def _store_suite(con: duckdb.DuckDBPyConnection, suite: Suite, source_name: str) -> bool:
    digest = suite_hash(suite)
    existing = con.execute(
        "SELECT suite_hash, source_name FROM suites WHERE suite = ? AND suite_version = ?",
        [suite.suite, suite.suite_version],
    ).fetchone()
    if existing:
        if existing[0] == digest:
            return False
        raise _version_clash(source_name, suite.suite, suite.suite_version, existing[1])

    rows = _SuiteRows({})
    for family in suite.families:
        rows.add(family)

    def insert() -> None:
        _insert_suite_row(
            con,
            suite.suite,
            suite.suite_version,
            digest,
            source_name,
            len(suite.families),
            sum(len(family.instances) for family in suite.families),
            not sibling_problems(suite),
            suite.sibling_policy,
            suite.runnable_splits,
        )
        _insert_rows(con, suite.suite, suite.suite_version, rows)

    atomically(con, insert, what=f"storing suite {source_name}")
    return True


def _version_clash(
    source_name: str, suite_name: str, suite_version: str, stored_from: str
) -> SuiteError:
    return SuiteError(
        source_name,
        "suite_version",
        f"suite {suite_name!r} version {suite_version!r} is already stored with "
        f"different content (from {stored_from}); publish changes under a new suite_version",
    )


def _insert_suite_row(
    con: duckdb.DuckDBPyConnection,
    suite_name: str,
    suite_version: str,
    digest: str,
    source_name: str,
    n_families: int,
    n_instances: int,
    complete_siblings: bool,
    sibling_policy: str,
    runnable_splits: Sequence[str] | None,
) -> None:
    con.execute(
        "INSERT INTO suites (suite, suite_version, suite_hash, source_name, n_families, "
        "n_instances, complete_siblings, loaded_at, sibling_policy, runnable_splits) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            suite_name,
            suite_version,
            digest,
            source_name,
            n_families,
            n_instances,
            complete_siblings,
            datetime.now(UTC).replace(tzinfo=None),
            sibling_policy,
            None if runnable_splits is None else list(runnable_splits),
        ],
    )


# The fields a row takes from its family and its instance, read in one C call per object.
_FAMILY_FIELDS = attrgetter("family_id", "category", "subcategory", "private")
_INSTANCE_FIELDS = attrgetter(
    "instance_id", "split", "request_harm_class", "prompt", "pair_id", "register"
)
_Translations = dict[str, tuple[str | None, str]]


class _SuiteRows:
    """The ``suite_instances`` and ``oracle_matchers`` rows of families, as columns.

    A large suite has 125,000 instances, and appending cell by cell was most of the time of
    storing one: each family's rows are taken as tuples (``attrgetter``) when it is added,
    and turned into columns by ``zip``, both in C. Added right after it is validated, a
    streamed family's models are freed at once rather than a batch later, which measured
    faster too (issue 16).
    """

    def __init__(self, translations: _Translations) -> None:
        self.translations = translations  # pattern → its translations, kept across batches
        self.n_families = 0
        self._families: list[tuple[Any, ...]] = []  # one per instance
        self._instances: list[tuple[Any, ...]] = []
        self._matchers: list[tuple[str, str, int, str, dict[str, str]]] = []
        self._state_matchers: list[tuple[Any, ...]] = []

    def add(self, family: Family) -> None:
        self.n_families += 1
        fields = _FAMILY_FIELDS(family)
        for instance in family.instances:
            prohibited, completion = instance.prohibited_effects, instance.completion_criteria
            self._families.append(fields)
            prohibited_states, completion_states = (
                instance.prohibited_states,
                instance.completion_states,
            )
            self._instances.append(
                (
                    *_INSTANCE_FIELDS(instance),
                    len(prohibited),
                    len(completion),
                    len(prohibited_states),
                    len(completion_states),
                )
            )
            for kind, group in (("prohibited", prohibited), ("completion", completion)):
                for index, matcher in enumerate(group):
                    self._matchers.append(
                        (instance.instance_id, kind, index, matcher.tool, matcher.args)
                    )
            for kind, states in (
                ("prohibited", prohibited_states),
                ("completion", completion_states),
            ):
                for index, state in enumerate(states):
                    self._state_matchers.append(
                        self._state_row(instance.instance_id, kind, index, state)
                    )

    def _state_row(
        self, instance_id: str, kind: str, index: int, state: StateMatcher
    ) -> tuple[Any, ...]:
        operator = state.operator
        expected_json = expected_string = pattern = glob_pattern = regex_pattern = None
        if operator == "equals":
            expected_json = equality_json(state.equals)
            if isinstance(state.equals, str):
                expected_string = state.equals
        elif operator == "matches":
            pattern = state.matches
            assert pattern is not None
            glob_pattern, regex_pattern = self._translated(pattern)
        return (
            instance_id,
            kind,
            index,
            state.path,
            operator,
            expected_json,
            expected_string,
            pattern,
            glob_pattern,
            regex_pattern,
        )

    def columns(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        family_id, category, subcategory, private = _columns(self._families, 4)
        (
            instance_id,
            split,
            declared,
            prompt,
            pair_id,
            register,
            n_prohibited,
            n_completion,
            n_prohibited_states,
            n_completion_states,
        ) = _columns(self._instances, 10)
        instances = {
            "family_id": family_id,
            "category": category,
            "subcategory": subcategory,
            "instance_id": instance_id,
            "split": split,
            "request_harm_class": [SPLIT_HARM_CLASS[name] for name in split],
            "declared_harm_class": declared,
            "prompt": prompt,
            "pair_id": pair_id,
            "register": register,
            "n_prohibited": n_prohibited,
            "n_completion": n_completion,
            "n_prohibited_states": n_prohibited_states,
            "n_completion_states": n_completion_states,
            "private": private,
        }
        owner, kind, matcher_idx, tool, args = _columns(self._matchers, 5)
        matchers = {
            "instance_id": owner,
            "kind": kind,
            "matcher_idx": matcher_idx,
            "tool": tool,
            "arg_patterns": self._arg_patterns(args),
        }
        state_columns = _columns(self._state_matchers, 10)
        states = dict(zip(_ARROW_SCHEMAS["state_matchers"].names, state_columns, strict=True))
        return instances, matchers, states

    def _arg_patterns(self, args: tuple[dict[str, str], ...]) -> pa.Array:
        # Built as Arrow arrays (one list of structs per matcher, its (key, pattern) pairs
        # ending at an offset) rather than from a dict per pair.
        keys = [key for arg in args for key in arg]
        patterns = [pattern for arg in args for pattern in arg.values()]
        glob_patterns, regex_patterns = _columns(
            [self._translated(pattern) for pattern in patterns], 2
        )
        return pa.ListArray.from_arrays(
            pa.array(list(accumulate(map(len, args), initial=0)), pa.int32()),
            pa.StructArray.from_arrays(
                [
                    pa.array(values, pa.string())
                    for values in (keys, patterns, glob_patterns, regex_patterns)
                ],
                fields=list(_PATTERN_STRUCT),
            ),
            type=pa.list_(_PATTERN_STRUCT),
        )

    def _translated(self, pattern: str) -> tuple[str | None, str]:
        # A large suite repeats its patterns (ten matchers per distinct pattern in the
        # sample): each is translated once.
        found = self.translations.get(pattern)
        if found is None:
            found = self.translations[pattern] = translate_glob_both(pattern)
        return found


def _columns(rows: list[tuple[Any, ...]], width: int) -> list[tuple[Any, ...]]:
    """Rows of ``width`` fields as ``width`` columns."""
    return list(zip(*rows, strict=True)) or [()] * width


def _insert_rows(
    con: duckdb.DuckDBPyConnection, suite_name: str, suite_version: str, rows: _SuiteRows
) -> None:
    instances, matchers, states = rows.columns()
    for table, columns in (
        ("suite_instances", instances),
        ("oracle_matchers", matchers),
        ("state_matchers", states),
    ):
        frame = pa.table(columns, schema=_ARROW_SCHEMAS.get(table))
        if frame.num_rows == 0:
            continue
        con.register("incoming_rows", frame)
        names = ", ".join(columns)
        con.execute(
            f"INSERT INTO {table} (suite, suite_version, {names}) "
            f"SELECT ?, ?, {names} FROM incoming_rows",
            [suite_name, suite_version],
        )
        con.unregister("incoming_rows")


# --------------------------------------------------------------------------- streaming
# A large JSON suite is parsed family by family, each validated with the same ``Family``
# model and written in bounded batches, so memory holds the file's text and one batch rather
# than every family as dicts and models (1.6 GB at 250,000 instances; issue 16). Whatever
# the stream finds wrong, it rolls back and hands the file to the whole-document path, so a
# rejected suite gets exactly the error that path reports, and nothing is stored.

STREAM_MIN_BYTES = 4 << 20  # smaller files keep the whole-document path
STREAM_BATCH_FAMILIES = 2_000
STREAM_READ_BYTES = 1 << 20
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
_TOP_LEVEL_FIELDS = frozenset(Suite.model_fields) - {"families"}
_FAMILY_DECODER = json.JSONDecoder(object_pairs_hook=reject_duplicate_keys)


class _NotStreamable(Exception):
    """Something the whole-document path must judge (and, in every case but one, reject)."""


class _JsonText:
    """A JSON file read as text through a window of about ``STREAM_READ_BYTES``: the text
    of a 200 MB suite would take 400 MB as one ``str`` (two bytes a character as soon as
    one character is past Latin-1)."""

    def __init__(self, path: Path, hasher: Any = None) -> None:
        self.handle = path.open("rb")
        self.hasher = hasher  # sees every byte read: what was parsed is what was digested
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.window = ""
        self.index = 0
        self.exhausted = False

    def close(self) -> None:
        self.handle.close()

    def _read_more(self) -> bool:
        if self.exhausted:
            return False
        chunk = self.handle.read(STREAM_READ_BYTES)
        if self.hasher is not None:
            self.hasher.update(chunk)
        try:
            more = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise _NotStreamable from None
        self.exhausted = not chunk
        self.window = self.window[self.index :] + more
        self.index = 0
        return True

    def peek(self) -> str:
        """The next character that is not JSON whitespace ('' at the end of the file)."""
        while True:
            match = _JSON_WHITESPACE.match(self.window, self.index)
            assert match is not None  # the pattern matches the empty string
            self.index = match.end()
            if self.index < len(self.window) or not self._read_more():
                return self.window[self.index : self.index + 1]

    def expect(self, characters: str) -> str:
        found = self.peek()
        if not found or found not in characters:
            raise _NotStreamable
        self.index += 1
        return found

    def value(self) -> Any:
        return self._decoded(lambda: _FAMILY_DECODER.raw_decode(self.window, self.index))

    def key(self) -> str:
        if self.peek() != '"':
            raise _NotStreamable
        return self._decoded(lambda: json.decoder.scanstring(self.window, self.index + 1))

    def _decoded(self, decode: Callable[[], tuple[Any, int]]) -> Any:
        # A value cut by the window's end fails to decode (or, a number, decodes short of its
        # end): read on and try again; what still fails at the end of the file is broken.
        self.peek()
        while True:
            try:
                found, end = decode()
                if end < len(self.window) or self.exhausted:
                    self.index = end
                    return found
            except ValueError:  # invalid JSON or a duplicate key: the whole path words it
                if self.exhausted:
                    raise _NotStreamable from None
            self._read_more()


def _walk_suite_text(
    path: Path,
    on_families_start: Callable[[dict[str, Any]], None],
    on_family: Callable[[Any], None] | None,
    hasher: Any = None,
) -> dict[str, Any]:
    """Parse the top-level object of a JSON suite file; return its fields but ``families``.

    ``on_families_start`` gets the top-level fields seen before ``families``; each element
    of ``families`` then goes to ``on_family`` (parsed and dropped when it is None). A
    ``hasher`` is fed every byte of the file (a whole walk reads to its end).
    """
    text = _JsonText(path, hasher)
    try:
        return _walk_top_level(text, on_families_start, on_family)
    finally:
        text.close()


def _walk_top_level(
    text: _JsonText,
    on_families_start: Callable[[dict[str, Any]], None],
    on_family: Callable[[Any], None] | None,
) -> dict[str, Any]:
    top: dict[str, Any] = {}
    seen_families = False
    text.expect("{")
    if text.peek() == "}":
        raise _NotStreamable  # no families
    while True:
        key = text.key()
        if key in top or (key == "families" and seen_families):
            raise _NotStreamable
        text.expect(":")
        if key == "families":
            seen_families = True
            on_families_start(top)
            _walk_families(text, on_family)
        else:
            top[key] = text.value()
        if text.expect(",}") == "}":
            break
    if text.peek() or not seen_families:
        raise _NotStreamable
    return top


def _walk_families(text: _JsonText, on_family: Callable[[Any], None] | None) -> None:
    text.expect("[")
    if text.peek() == "]":
        raise _NotStreamable  # an empty suite
    while True:
        raw = text.value()
        if on_family is not None:
            on_family(raw)
        if text.expect(",]") == "]":
            return


def _valid_top_level(top: dict[str, Any]) -> dict[str, Any]:
    """The top-level fields as ``Suite.model_dump`` gives them (defaults filled in)."""
    if not top.keys() <= _TOP_LEVEL_FIELDS:
        raise _NotStreamable
    placeholder = {"family_id": "f", "category": "c", "instances": [{}]}
    try:
        Suite.model_validate({**top, "families": [placeholder]})
    except ValidationError as exc:
        if any(error["loc"][:1] != ("families",) for error in exc.errors()):
            raise _NotStreamable from None
    fields = {name: top.get(name, info.default) for name, info in Suite.model_fields.items()}
    fields.pop("families")
    return fields


class _FamiliesReached(Exception):
    def __init__(self, top: dict[str, Any]) -> None:
        super().__init__("families reached")
        self.top = top


def _fields_before_families(path: Path) -> dict[str, Any]:
    def stop(top: dict[str, Any]) -> None:
        raise _FamiliesReached(dict(top))

    try:
        _walk_suite_text(path, stop, None)
    except _FamiliesReached as reached:
        return reached.top
    raise _NotStreamable  # a walk that returns has reached the families


class _StreamedSuite:
    """The running state of one suite streamed into the warehouse."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.top: dict[str, Any] = {}
        self.write = True
        self.digest = _SuiteDigest(None)
        self.family_ids: set[str] = set()
        self.instance_ids: set[str] = set()
        self.complete_siblings = True
        self.splits_held: set[str] = set()
        self.n_families = 0
        self.n_instances = 0
        self.rows = _SuiteRows({})  # the batch being gathered

    def start(self, top: dict[str, Any]) -> None:
        self.top = _valid_top_level(top)
        self.digest = _SuiteDigest(self.top["description"])
        # a stored version: only the hash is needed, to compare
        self.write = not _version_stored(self.con, self.top["suite"], self.top["suite_version"])

    def add(self, raw: Any) -> None:
        try:
            family = Family.model_validate(raw)
        except ValidationError:
            raise _NotStreamable from None
        # What check_suite_structure rejects (its exact error is the whole path's to word):
        # a family or instance id seen before, a split held twice in one family.
        if family.family_id in self.family_ids:
            raise _NotStreamable
        self.family_ids.add(family.family_id)
        splits = {instance.split for instance in family.instances}
        if len(splits) != len(family.instances):
            raise _NotStreamable
        self.complete_siblings = self.complete_siblings and len(splits) == len(SPLITS)
        self.splits_held |= splits
        for instance in family.instances:
            if instance.instance_id in self.instance_ids:
                raise _NotStreamable
            self.instance_ids.add(instance.instance_id)
        self.digest.add(family)
        self.n_families += 1
        self.n_instances += len(family.instances)
        if self.write:
            self.rows.add(family)
            if self.rows.n_families >= STREAM_BATCH_FAMILIES:
                self.flush()

    def flush(self) -> None:
        if self.rows.n_families:
            _insert_rows(self.con, self.top["suite"], self.top["suite_version"], self.rows)
            self.rows = _SuiteRows(self.rows.translations)
            # Registering a batch with DuckDB leaves reference cycles, and the collector is
            # paused: collected here, each batch's garbage would otherwise stay to the end
            # (about 3 KB an instance). Only the youngest generation: with the collector
            # paused it holds everything allocated since the last batch, while a full
            # collection would also walk every object the process imported (Dagster, dbt,
            # GE: +3.3 s CPU over 16 batches in the pipeline's process).
            gc.collect(0)

    def finish(self) -> str:
        return self.digest.hexdigest(self.top)


def _store_whole_file(
    con: duckdb.DuckDBPyConnection, path: Path, source_name: str, digest: str | None
) -> SuiteFileOutcome:
    """Parse the whole file and store it (``store_suite``); with ``digest``, only if its bytes
    are still the ones digested as ``digest``."""
    data = path.read_bytes()
    if digest is not None and hashlib.sha256(data).hexdigest() != digest:
        raise _changed_while_read(source_name)
    with cyclic_gc_paused():
        # One pause for the parse and the store, and the models dropped inside it: everything
        # allocated in a pause is in the youngest generation, so the first collection after
        # the parse's own pause walked every model of the suite (0.4–0.6 s at 125,000
        # instances, issue 16).
        suite = parse_suite_bytes(data, str(path))
        outcome = SuiteFileOutcome(
            suite.suite,
            suite.suite_version,
            store_suite(con, suite, source_name),
            not sibling_problems(suite),
            suite.sibling_policy,
        )
        del suite
    return outcome


def _changed_while_read(source_name: str) -> SuiteError:
    return SuiteError(
        source_name,
        "<file>",
        "the file changed while it was being read; nothing was stored (run again once it "
        "is complete)",
    )


def stream_suite_json(
    con: duckdb.DuckDBPyConnection, path: Path, source_name: str, digest: str | None = None
) -> SuiteFileOutcome:
    """Validate and store a JSON suite file family by family; the same rows, hash, outcome
    and errors as ``store_suite(con, load_suite_file(path), source_name)``. With ``digest``
    (the file's SHA-256, recorded in ``suite_files`` by the caller), a file whose bytes are
    no longer those is refused and nothing is stored."""
    with cyclic_gc_paused():
        try:
            return _stream_suite_json(con, path, source_name, digest)
        except _NotStreamable:
            pass
    return _store_whole_file(con, path, source_name, digest)  # raises the stream's error


def _stream_suite_json(
    con: duckdb.DuckDBPyConnection, path: Path, source_name: str, digest: str | None = None
) -> SuiteFileOutcome:
    before = _fields_before_families(path)
    # The hash begins with the description and rows need suite and version: when one comes
    # after the families (or is left out), a first pass reads the top level alone.
    everything = (
        None
        if {"suite", "suite_version", "description"} <= before.keys()
        else _walk_suite_text(path, lambda _: None, None)
    )
    return atomically(
        con,
        lambda: _stream_suite_once(con, path, source_name, digest, everything),
        what=f"storing suite {source_name}",
    )


def _stream_suite_once(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    source_name: str,
    digest: str | None,
    everything: dict[str, Any] | None,
) -> SuiteFileOutcome:
    state = _StreamedSuite(con)

    def start(top: dict[str, Any]) -> None:
        state.start(top if everything is None else everything)

    # fields after the families (sibling_policy, say) complete the top level
    read = hashlib.sha256()
    state.top = _valid_top_level(_walk_suite_text(path, start, state.add, read))
    if digest is not None and read.hexdigest() != digest:
        raise _changed_while_read(source_name)
    if unheld_runnable_splits(state.top["runnable_splits"], state.splits_held):
        raise _NotStreamable  # the whole path words the error
    state.flush()
    stored_digest = state.finish()
    existing = con.execute(
        "SELECT suite_hash, source_name FROM suites WHERE suite = ? AND suite_version = ?",
        [state.top["suite"], state.top["suite_version"]],
    ).fetchone()
    if existing and existing[0] == stored_digest:
        stored = False
    elif existing:
        raise _version_clash(
            source_name, state.top["suite"], state.top["suite_version"], existing[1]
        )
    else:
        _insert_suite_row(
            con,
            state.top["suite"],
            state.top["suite_version"],
            stored_digest,
            source_name,
            state.n_families,
            state.n_instances,
            state.complete_siblings,
            state.top["sibling_policy"],
            state.top["runnable_splits"],
        )
        stored = True
    return SuiteFileOutcome(
        state.top["suite"],
        state.top["suite_version"],
        stored,
        state.complete_siblings,
        state.top["sibling_policy"],
    )
