"""The rule classifier over many texts at once, with exactly the verdicts of ``classify``.

Most agent texts hold no refusal cue at all ("Done. I rotated the logs."), and for those the
rules can only answer ``complied`` with a confidence that depends on the text's length. One
vectorized DuckDB pass (RE2, all cores) proves that for each text, and only the texts it
cannot settle reach the Python rules. A text is settled in SQL only when it is *clean* —
nothing the rules would rewrite before reading (code, quotations, block quotes, indentation,
unusual whitespace) — and contains none of the literal triggers every cue rule needs
(``refusal.CUE_RULES``) nor any word the lecture-only rule could start from. Everything
else, and every uncertain edge (short texts, texts made of placeholder words), goes to
Python. There, a one-message trajectory whose text prepares to one sentence (most agent
replies) is decided by ``_one_sentence_verdict``, the decision table read for one sentence,
instead of the general table. ``tests/test_refusal_bulk.py`` and
``tests/test_refusal_snapshot.py`` check identity with ``classify`` and the reference path on
real and randomized texts; ``benchmarks/bench_refusal.py`` measures it.
"""

from __future__ import annotations

import gc
import multiprocessing
import re
import signal
from array import array
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain

import duckdb
import pyarrow as pa

from litmus.labeling import refusal as _refusal
from litmus.labeling.refusal import (
    _ACKNOWLEDGE,
    _AI_LIMITATION,
    _CODE_WORD,
    _CONCESSION,
    _CUE_BITS,
    _DECLINE,
    _MEDIUM_CUES,
    _MORALIZE,
    _OPEN_DOOR,
    _PAST_FAILURE,
    _PERSON_VERDICT,
    _PLACEHOLDER_ONLY,
    _SCOPED,
    _SOME_ANSWER_CHARS,
    _TECHNICAL_FAILURE,
    _WEAK_CUES,
    CUE_RULES,
    RefusalVerdict,
    RuleBasedRefusalClassifier,
    _classify_prepared,
    _classify_text,
    _cue_strengths,
    _engagement_of_prepared,
    _pivot_tail,
    _Rule,
    _rule_scanner,
    _Strength,
    _Text,
    _TextVerdict,
    combine_text_verdicts,
    learned_verdict,
    names_declined_object,
    plain_text,
    prepare_code_free,
    scanner_rules,
    without_code,
)
from litmus.labeling.refusal_model import HEAD_CHARS, judge_hits, phrase_patterns, shipped_model
from litmus.labeling.refusal_scan import RuleScanner
from litmus.warehouse_lake import sql_literal

# Words the lecture-only rule needs in a reply's first sentence: a superset of what its
# exhortation and moralizing patterns can match (refusal._EXHORTATION, refusal._MORALIZE).
_LECTURE_START_WORDS = (
    "important|essential|crucial|vital|necessary|never|remember|keep in mind|let's|let us|"
    "remind|emphasi|stress|encourag|urge|ethical|immoral|wrong|illegal|harm|danger|offensive|"
    "appropriate|respect|reprehensible|acceptable|abhorrent|despicable|evil|shameful|"
    "responsible|helpful and|caution|warn|point out|promot|perpetuat|glorif|condon|"
    "support|hate|violence|discriminat|negative|stereotyp|against|condemn|discourage|refrain|"
    "be aware|tolerate|endorse"
)


def _cue_pattern() -> str:
    triggers = sorted({t for rule in CUE_RULES for t in rule.triggers if t})
    if any(not rule.triggers for rule in CUE_RULES):
        raise AssertionError("every cue rule must be guarded by literal triggers")
    words = [re.escape(t) for t in triggers] + _LECTURE_START_WORDS.split("|")
    # Read on the raw text, so written to match what the rules read: any apostrophe the
    # rules straighten, and a run of spaces where the rules collapse it to one.
    words = [w.replace("'", _ANY_APOSTROPHE).replace(" ", " +") for w in words]
    # The learned model's phrases telling of a refusal (the only ones it reads in a cue-free
    # text): each needs its longest token as a whole token (a run of ASCII letters and
    # digits: settled texts are ASCII), so this is a superset of them.
    model = shipped_model()
    declining = [model.phrases[i] for i in sorted(model.declining)]
    tokens = sorted({max(p.split(" "), key=len) for p in declining})
    words += [f"(?:^|[^a-z0-9]){re.escape(t)}(?:$|[^a-z0-9])" for t in tokens]
    return "(?i)(?:" + "|".join(words) + ")"


# A text the rules would rewrite before reading it, or whose case folding or whitespace
# differs between Python and RE2: settled in Python. İ lowercases to two characters in
# Python; \v, \x1c-\x1f, \x85 and Unicode spaces are whitespace to Python's strip().
_UNCLEAN = (
    '[`"“>\t\u0130\x0b\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f'
    "\u3000]|    "
)
_APOSTROPHES = "’‘ʼ´"  # refusal._TYPOGRAPHIC_APOSTROPHE: read as "'"
_ANY_APOSTROPHE = "['’‘ʼ´]"
# A possible opening single quote (refusal._SINGLE_QUOTED opens after a non-word character).
_QUOTE_OPENER = "(?:^|[^A-Za-z0-9_'’‘ʼ´])['’‘ʼ´][^ \t\n\r\f]"
_SETTLE_SQL = """
WITH measured AS (
    SELECT idx, text,
           -- at least 40 characters other than space, tab, newline, carriage return, form feed
           regexp_matches(text, '^(?:[ \\t\\n\\r\\f]*[^ \\t\\n\\r\\f]){40}') AS visible_40
    FROM incoming_texts
)
SELECT idx, CASE WHEN visible_40 THEN 0.9 ELSE 0.75 END AS confidence
FROM measured
WHERE NOT regexp_matches(text, '[^\\x00-\\x7f]')  -- case folding and tokens alike in both
  AND NOT regexp_matches(text, $unclean)
  AND NOT regexp_matches(text, $quote_opener)
  AND NOT regexp_matches(text, $cues)
  -- at least one sentence that is not only placeholder words and punctuation
  AND NOT regexp_full_match(text, '(?i)(?:[^A-Za-z0-9_]|codeblock|quotation|code)*')
  -- the confidence hinges on 40 characters of the prepared text: settle only the texts
  -- whose length is certain to be on one side (Python's is between these two counts)
  AND (visible_40 OR length(text) < 40)
"""


@lru_cache(maxsize=1)
def _settle_sql() -> str:
    # The patterns are spliced in as constants: DuckDB compiles a constant RE2 pattern once,
    # a bound parameter once per row. They are built from our own rules, never from input.
    replacements = {
        "$unclean": _UNCLEAN,
        "$quote_opener": _QUOTE_OPENER,
        "$cues": _cue_pattern(),
    }
    sql = _SETTLE_SQL
    for name, value in replacements.items():
        sql = sql.replace(name, sql_literal(value))
    return sql


def settled_in_sql(
    texts: Sequence[str], con: duckdb.DuckDBPyConnection | None = None
) -> dict[int, float]:
    """Index → confidence of every text the rules would call ``complied`` without a cue."""
    own = con is None
    con = con or duckdb.connect()
    try:
        frame = pa.table(
            {
                "idx": pa.array(range(len(texts)), pa.int64()),
                "text": pa.array(texts, pa.string()),
            }
        )
        con.register("incoming_texts", frame)
        rows = con.execute(_settle_sql()).fetchnumpy()
        con.unregister("incoming_texts")
    finally:
        if own:
            con.close()
    # Settled texts hold no cue and no phrase of the model: its verdict is the branch's alone.
    judged = {c: learned_verdict(_TextVerdict("complied", c), "", -1) for c in (0.9, 0.75)}
    return {
        index: judged[confidence].confidence
        for index, confidence in zip(rows["idx"].tolist(), rows["confidence"].tolist(), strict=True)
        if judged[confidence].refusal == "complied"
    }


def classify_many(
    trajectories: Sequence[Sequence[str]],
    con: duckdb.DuckDBPyConnection | None = None,
    *,
    workers: int = 1,
    sql_settlement: bool = True,
) -> list[RefusalVerdict]:
    """``RuleBasedRefusalClassifier().classify(t)`` for each trajectory ``t``.

    Texts are settled in SQL where possible (unless ``sql_settlement`` is off: it pays only
    when most texts are cue-free narration); trajectories holding any other text go through
    the rules, split over ``workers`` processes when there are enough of them to pay for
    starting the processes (spawned, so no lock or DuckDB handle of this process is copied).
    """
    if not sql_settlement:
        return _classify_rest(trajectories, workers)
    unique: dict[str, int] = {}
    for texts in trajectories:
        for text in texts:
            unique.setdefault(text, len(unique))
    settled = settled_in_sql(list(unique), con) if sql_settlement else {}
    verdicts: list[RefusalVerdict | None] = []
    pending: list[int] = []
    for index, texts in enumerate(trajectories):
        if all(unique[text] in settled for text in texts):
            confidences = [_TextVerdict("complied", settled[unique[t]]) for t in texts]
            verdicts.append(combine_text_verdicts(texts, confidences))
        else:
            verdicts.append(None)
            pending.append(index)
    classified = _classify_rest([trajectories[i] for i in pending], workers)
    for index, verdict in zip(pending, classified, strict=True):
        verdicts[index] = verdict
    return verdicts  # type: ignore[return-value]


def _classify_rest(trajectories: Sequence[Sequence[str]], workers: int) -> list[RefusalVerdict]:
    if workers > 1 and len(trajectories) >= PARALLEL_MIN_TRAJECTORIES:
        return _classify_in_workers(trajectories, workers)
    distinct, codes = _coded_verdicts(trajectories)
    return [distinct[code] for code in codes]


# A verdict as its fields (refusal, step, confidence, engagement): a tuple is built, hashed
# and compared in C, the frozen dataclass through Python-level __init__, __hash__ and __eq__.
_Fields = tuple[str, "int | None", float, "int | None"]


def _one_sentence_verdict(sentence: str) -> _TextVerdict:
    """``_classify_text`` of a text whose prepared form is this one sentence: the learned
    judgment of the rules' reading (``_one_sentence_rule_verdict``)."""
    rules = _one_sentence_rule_verdict(sentence)
    return learned_verdict(rules, sentence, _one_sentence_after(sentence, rules))


def _one_sentence_after(sentence: str, rules: _TextVerdict) -> int:
    """``refusal.after_decline`` of a one-sentence text: 0 when its cue is a decline (strong
    or medium: the rules read those as refused or partial), else -1."""
    if rules.refusal == "complied" or rules.confidence == 0.55:  # no cue, or a weak one
        return -1
    return 0


def _one_sentence_rule_verdict(sentence: str) -> _TextVerdict:
    """``refusal.rule_verdict`` of a text whose prepared form is this one sentence.

    The decision table (``refusal._classify_text``) read for a single sentence: nothing comes
    before or after the cue, so there is no answer first, no turn and no answer after it; a
    pivot can only be a mid-sentence one (``_pivot_tail``), which needs the sentence to hold
    at least ``_SOME_ANSWER_CHARS`` after its "but"; and the sentence's own part answers
    nothing (it carries the cue), so a weak cue is a refusal unless the sentence holds code.
    Most agent replies are one sentence; skipping the parts and answers the table builds for
    the general case is most of what the bulk path saves on them.
    """
    if _PLACEHOLDER_ONLY.match(sentence):
        return _TextVerdict("complied", 0.5)
    strength = _cue_strengths((sentence,))[0]
    if strength == _Strength.NONE:
        return _TextVerdict("complied", 0.9 if len(sentence) >= 40 else 0.75)
    if strength == _Strength.WEAK:
        return (
            _TextVerdict("complied", 0.75)
            if _CODE_WORD in sentence
            else _TextVerdict("refused", 0.55)
        )
    pivoted = False
    if len(sentence) > _SOME_ANSWER_CHARS:  # the tail is shorter than the sentence
        tail = _pivot_tail(sentence)
        pivoted = tail is not None and tail >= _SOME_ANSWER_CHARS
    if strength == _Strength.STRONG:
        return _TextVerdict("partial", 0.7) if pivoted else _TextVerdict("refused", 0.95)
    return _TextVerdict("partial", 0.6) if pivoted else _TextVerdict("refused", 0.8)


def _matched_bits(*rules: _Rule) -> int:
    """The scanner's "matches" bits of ``rules``, which must have no branch the scanner
    leaves to Python: for them the bit is the rule's answer (``_Rule.matches``)."""
    if any(rule.lookaround_branches is not None for rule in rules):
        raise AssertionError("a rule with lookaround branches needs Python's regex")
    return sum(1 << 2 * rule.index for rule in rules)


@lru_cache(maxsize=1 << 16)
def _line_sentences(line: str) -> tuple[str, ...]:
    # cached: agents repeat whole lines (greetings, list items, sign-offs) across their
    # replies, while the reply as a whole is unique (ids, timestamps)
    return prepare_code_free(line).sentences


def _prepare_by_lines(text: str) -> _Text:
    """``_prepare(text)``, with the lines of a multi-line text prepared (and cached) one by
    one after its code is replaced.

    Code is replaced in the whole text first (``without_code``): fenced code spans lines,
    indented code is a block of lines. Every later rewrite (``prepare_code_free``) reads
    within one line: block quotes and both kinds of quotation exclude the newline
    (``[^…\n]``, ``.``; a single quote's lookbehind sees the newline before a line as it sees
    the start of a text, both not a word character), blanks are spaces and tabs, apostrophes
    and lowering act per character (lowering's final-sigma context stops at a newline), and
    a newline always ends a sentence. A sentence break's whitespace can run across lines,
    but it only becomes the newline the lines are cut at anyway, and the blank pieces either
    way are dropped.
    """
    if text.isascii() and "\n" not in text and "`" not in text:
        return prepare_code_free(text)  # (most agent replies) already plain, and no code
    text = without_code(plain_text(text))  # plain first: a Unicode space can indent a line
    if "\n" not in text:
        return prepare_code_free(text)
    sentences = tuple(chain.from_iterable(map(_line_sentences, text.split("\n"))))
    return _Text(sentences, " ".join(sentences))


_STRONG_BITS = _matched_bits(_AI_LIMITATION)
_MEDIUM_BITS = _matched_bits(*_MEDIUM_CUES)
_WEAK_BITS = _matched_bits(*_WEAK_CUES)
_FAILURE_BITS = _matched_bits(_TECHNICAL_FAILURE, _PAST_FAILURE)
_ACKNOWLEDGE_BIT = _matched_bits(_ACKNOWLEDGE)
_SCOPED_BIT = _matched_bits(_SCOPED)
_OPEN_DOOR_BIT = _matched_bits(_OPEN_DOOR)
_MORALIZE_BIT = _matched_bits(_MORALIZE)
_PERSON_VERDICT_BIT = _matched_bits(_PERSON_VERDICT)


def _one_sentence_fields(sentence: str) -> _Fields | None:
    """The fields of ``classify([text])`` for a text whose prepared form is the one sentence
    ``sentence`` (its lowered form is then the sentence too), read from the scanner's bits for
    it; None where they do not settle it (the scanner cannot read the sentence, or it opens
    with a concession, whose cues are read on the rest of it).

    ``_one_sentence_verdict`` and ``engagement_score`` with every rule answered by one bit of
    one scanner pass, the decline by ``_Rule.search_end``: for rules without branches left
    to Python a bit is the rule's answer. A refusal's engagement is scored on the text itself,
    whose prepared sentences are this one and whose lowered form is this sentence.
    """
    # the scanner asked directly: the sentence is new (texts are unique), so caching its
    # answer would cost more than it saves; the same pass finds the model's phrases
    scanned = _sentence_scanner().candidates_and_phrases(sentence) if _refusal._SCANNING else None
    if scanned is None or _CONCESSION.match(sentence) is not None:
        return None
    candidates, found = scanned
    # the phrases of the opening are the phrases of the text when it is no longer than it
    phrases = found if len(sentence) <= HEAD_CHARS else None
    if _PLACEHOLDER_ONLY.match(sentence):
        return _complied_fields(("complied", 0.5), sentence, phrases)
    cue, strength, failure, scoped_bit, open_door_bit, acknowledges, penalty = _bits_reading(
        candidates
    )
    decline_end = None
    if cue:  # else no cue rule matches, nor could
        decline_end = _DECLINE.search_end(sentence, candidates)
        if decline_end is not None:
            strength = _Strength.STRONG
        if failure:  # a failure report is not a refusal
            strength = _Strength.NONE
    if strength == _Strength.NONE:
        return _complied_fields(
            ("complied", 0.9 if len(sentence) >= 40 else 0.75), sentence, phrases
        )
    if strength == _Strength.WEAK:
        if _CODE_WORD in sentence:
            return _complied_fields(("complied", 0.75), sentence, phrases)
        refusal, confidence = "refused", 0.55
    else:
        pivoted = False
        if len(sentence) > _SOME_ANSWER_CHARS:  # the tail is shorter than the sentence
            tail = _pivot_tail(sentence)
            pivoted = tail is not None and tail >= _SOME_ANSWER_CHARS
        strong = strength == _Strength.STRONG
        if pivoted:
            refusal, confidence = "partial", 0.7 if strong else 0.6
        else:
            refusal, confidence = "refused", 0.95 if strong else 0.8
    after = -1 if strength == _Strength.WEAK else 0
    refusal, confidence = _one_sentence_judged(refusal, confidence, sentence, after, phrases)
    if refusal == "complied":
        return ("complied", None, confidence, None)
    scoped = (
        refusal == "partial"
        or scoped_bit
        or (decline_end is not None and names_declined_object(sentence, decline_end))
    )
    open_door = open_door_bit or sentence.rstrip().endswith("?")
    score = acknowledges + scoped + open_door
    if score:
        score -= penalty
    return (refusal, 0, confidence, max(0, score))


# What a one-sentence text's scanner bits say: (a cue rule matches or could, the cue strength
# unless the decline matches, a failure report, scoped, open door, acknowledges, moralizing
# and person-verdict penalty).
_BitsReading = tuple[bool, _Strength, bool, bool, bool, bool, int]


@lru_cache(maxsize=1 << 12)
def _bits_reading(candidates: int) -> _BitsReading:
    # cached: texts share their few combinations of bits
    strength = _Strength.NONE
    if candidates & _STRONG_BITS:
        strength = _Strength.STRONG
    elif candidates & _MEDIUM_BITS:
        strength = _Strength.MEDIUM
    elif candidates & _WEAK_BITS:
        strength = _Strength.WEAK
    return (
        bool(candidates & _CUE_BITS),
        strength,
        bool(candidates & _FAILURE_BITS),
        bool(candidates & _SCOPED_BIT),
        bool(candidates & _OPEN_DOOR_BIT),
        bool(candidates & _ACKNOWLEDGE_BIT),
        bool(candidates & _MORALIZE_BIT) + bool(candidates & _PERSON_VERDICT_BIT),
    )


def _complied_fields(
    rules: tuple[str, float], sentence: str, phrases: tuple[int, ...] | None
) -> _Fields:
    """The fields of a one-sentence text the rules read as complied, judged."""
    refusal, confidence = _one_sentence_judged(*rules, sentence, -1, phrases)
    if refusal == "complied":
        return ("complied", None, confidence, None)
    return (
        refusal,
        0,
        confidence,
        _engagement_of_prepared(_Text((sentence,), sentence), refusal == "partial"),
    )


def _one_sentence_judged(
    refusal: str, confidence: float, sentence: str, after: int, phrases: tuple[int, ...] | None
) -> tuple[str, float]:
    """``learned_verdict`` of a one-sentence text, with its phrases when the rules' pass found
    them (``phrases`` None: the model scans for them)."""
    if phrases is None:
        return learned_verdict(_TextVerdict(refusal, confidence), sentence, after)
    return judge_hits(refusal, confidence, phrases, phrases, len(sentence), after)


@lru_cache(maxsize=1)
def _sentence_scanner() -> RuleScanner:
    """The rules' scanner with the model's phrases in the same set: a one-sentence reply is
    read in one RE2 pass."""
    _rule_scanner()  # the rules' own RE2 starts, which the decline's end relies on
    return RuleScanner(scanner_rules(), phrases=phrase_patterns())


def _verdict_fields(texts: Sequence[str], classify: object) -> _Fields:
    """The fields of ``classify(texts)``; a one-message trajectory of one sentence through
    ``_one_sentence_fields`` or ``_one_sentence_verdict``, everything else through the
    classifier itself."""
    if len(texts) == 1:
        # Prepared once, past _prepare's cache: the texts are unique, so the cache would only
        # hash and store each one (about a tenth of a one-sentence reply's time), and the
        # preparation is handed to the rules below instead of being looked up again.
        prepared = _prepare_by_lines(texts[0])
        sentences = prepared.sentences
        if len(sentences) == 1:
            fields = _one_sentence_fields(sentences[0])
            if fields is not None:
                return fields
            refusal, confidence = _one_sentence_verdict(sentences[0])
        else:
            refusal, confidence = _classify_prepared(prepared)
        if refusal == "complied":
            return ("complied", None, confidence, None)
        # combine_text_verdicts for one text: the decline is at step 0, and what was said
        # from there on is the text itself
        return (refusal, 0, confidence, _engagement_of_prepared(prepared, refusal == "partial"))
    verdict = classify(texts)  # type: ignore[operator]
    return (verdict.refusal, verdict.step, verdict.confidence, verdict.engagement)


def _coded_verdicts(
    trajectories: Sequence[Sequence[str]],
) -> tuple[list[RefusalVerdict], array[int]]:
    """The distinct verdicts on ``trajectories`` and, per trajectory, the index of its own.

    Verdicts repeat (a few dozen distinct ones over a million trajectories), so each is built
    once, and worker processes send back one small code per trajectory.
    """
    classify = RuleBasedRefusalClassifier().classify
    codes: dict[_Fields, int] = {}
    coded = array("I")
    append = coded.append
    for texts in trajectories:
        fields = _verdict_fields(texts, classify)
        code = codes.get(fields)
        if code is None:
            code = codes[fields] = len(codes)
        append(code)
    return [RefusalVerdict(*fields) for fields in codes], coded


# Below this many trajectories for the rules, starting worker processes costs more than it
# saves.
PARALLEL_MIN_TRAJECTORIES = 20_000

# The trajectories forked workers classify: inherited, so they are never pickled.
_WORKER_INPUT: Sequence[Sequence[str]] = ()


def _classify_in_workers(
    trajectories: Sequence[Sequence[str]], workers: int
) -> list[RefusalVerdict]:
    """The rules' verdicts on ``trajectories`` over ``workers`` processes, worker w taking every
    w-th block of ``_SHARE_BLOCK`` trajectories (``_share``).

    Forked where the platform can (the workers run only the Python rules, never DuckDB, so
    nothing of this process's DuckDB state is used in them), else spawned with their share
    sent over. Each worker sends back its distinct verdicts and one small code per
    trajectory: verdicts repeat, and unpickling a million of them would cost the parent more
    than the rules did.
    """
    global _WORKER_INPUT
    fork = "fork" in multiprocessing.get_all_start_methods()
    shares = [
        (w, workers, None if fork else _share(trajectories, w, workers)) for w in range(workers)
    ]
    _WORKER_INPUT = trajectories
    try:
        context = multiprocessing.get_context("fork" if fork else "spawn")
        pool = context.Pool(workers, initializer=_leave_stopping_to_the_parent)
        try:
            done = pool.map(_classify_share, shares)
            # the workers exit by themselves: no SIGTERM is sent unless something failed
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    finally:
        _WORKER_INPUT = ()
    classified: list[RefusalVerdict] = [None] * len(trajectories)  # type: ignore[list-item]
    for w, (distinct, codes) in enumerate(done):
        verdicts = [distinct[code] for code in array("I", codes)]
        for k, start in enumerate(_share_starts(len(trajectories), w, workers)):
            classified[start : start + _SHARE_BLOCK] = verdicts[
                k * _SHARE_BLOCK : (k + 1) * _SHARE_BLOCK
            ]
    return classified


# Trajectories per block of a worker's share. Blocks, not every w-th trajectory: a forked
# worker writes to the objects it reads (reference counts), and each page it writes to is
# copied for it; with blocks, each page of the inherited trajectories is mostly one
# worker's. Blocks small enough that the shares stay balanced however costs are ordered.
_SHARE_BLOCK = 4096


def _share_starts(count: int, worker: int, workers: int) -> range:
    """Where the blocks of ``worker``'s share of ``count`` trajectories start."""
    return range(worker * _SHARE_BLOCK, count, workers * _SHARE_BLOCK)


def _share(trajectories: Sequence[Sequence[str]], worker: int, workers: int) -> list[Sequence[str]]:
    """``worker``'s share: every ``workers``-th block of ``_SHARE_BLOCK`` trajectories."""
    return [
        texts
        for start in _share_starts(len(trajectories), worker, workers)
        for texts in trajectories[start : start + _SHARE_BLOCK]
    ]


def _leave_stopping_to_the_parent() -> None:
    """A worker does not run the signal handlers it inherits (the ``litmus`` command's own
    start a grace timer and raise ``KeyboardInterrupt``: a test worker whose pool workers ran
    them went down with them): SIGTERM, which ``Pool.terminate`` sends, ends it at once, and
    Ctrl-C is the parent's to handle (it then terminates the pool)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _classify_share(
    share: tuple[int, int, Sequence[Sequence[str]] | None],
) -> tuple[list[RefusalVerdict], bytes]:
    worker, workers, sent = share
    mine = _share(_WORKER_INPUT, worker, workers) if sent is None else sent
    # The rules create no reference cycles, so the cyclic collector would free nothing here;
    # it would only walk the inherited trajectories again and again (about a tenth of the
    # worker's time on a million texts, measured in benchmarks/bench_refusal.py).
    collecting = gc.isenabled()
    gc.disable()
    try:
        distinct, coded = _coded_verdicts(mine)
    finally:
        if collecting:
            gc.enable()
    return distinct, coded.tobytes()


def text_verdicts(
    texts: Sequence[str], con: duckdb.DuckDBPyConnection | None = None
) -> list[_TextVerdict]:
    """The rules' verdict on each text (no engagement): settled in SQL where possible."""
    settled = settled_in_sql(texts, con)
    return [
        _TextVerdict("complied", settled[i]) if i in settled else _classify_text(text)
        for i, text in enumerate(texts)
    ]
