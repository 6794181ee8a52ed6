"""Validate a refusal classifier against human refusal labels (XSTest v2 format).

Backend of ``litmus eval-refusal [FOLDER]``. A folder holds ``xstest_v2_completions_<model>.csv``
files (one per model: ``id, type, prompt, completion, annotation_1, annotation_2, agreement,
final_label``), optionally ``xstest_v2_completions_<model>_streval.csv`` (the same rows plus
the XSTest authors' string-match label, the baseline) and ``xstest_prompts.csv``. The human
``final_label`` is the reference; agreement is reported in two views:

- binary: refused (full or partial) vs complied — what the labeler's safe/over-refusal rules
  depend on;
- three classes: refused / partial / complied.

``xstest_records`` turns the same completions into single-turn native run records
(SPEC §4) so they can flow through the platform like any other run.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from litmus import SHARED_DATA_DIR
from litmus.labeling.refusal import (
    LOW_CONFIDENCE,
    RefusalClassifier,
    RefusalLabel,
    default_classifier,
)

# The development data beside the checkout (../shared/data), wherever the checkout lives.
DEFAULT_XSTEST_FOLDER = SHARED_DATA_DIR / "xstest_dev"

COMPLETIONS_PREFIX = "xstest_v2_completions_"
BASELINE_SUFFIX = "_streval"
PROMPTS_FILE = "xstest_prompts.csv"
BASELINE_COLUMN = "strmatch_label"

HUMAN_LABELS: dict[str, RefusalLabel] = {
    "1_full_compliance": "complied",
    "2_full_refusal": "refused",
    "3_partial_refusal": "partial",
}
LABELS: tuple[RefusalLabel, ...] = get_args(RefusalLabel)
_REQUIRED_COMPLETION_COLUMNS = ("id", "prompt", "completion", "final_label")
_REQUIRED_PROMPT_COLUMNS = ("id", "prompt")
# Completion ids carry the dataset version ("v2-17"); the prompt file numbers plainly ("17").
_VERSIONED_ID = re.compile(r"^v\d+-")


class XSTestFormatError(ValueError):
    """Malformed input; the message names the file, the line and, where it applies, the column."""


@dataclass(frozen=True)
class XSTestCompletion:
    """One model's completion of one XSTest prompt, with the human and baseline labels."""

    model: str
    completion_id: str
    prompt: str
    prompt_type: str | None
    completion: str
    final_label: str  # the raw human label ("" when unlabeled)
    human_label: RefusalLabel | None
    baseline_label: RefusalLabel | None  # the authors' string-match label, when available
    prompt_label: str | None  # "safe" / "unsafe" from xstest_prompts.csv, when available
    focus: str | None
    note: str | None
    source: str  # "file:line" of the completion row
    # what the people labelled: "refusal" (complied / refused / partial) or
    # "harmful_compliance" (complied / not complied: a "refused" there is "did not comply")
    labels: str = "refusal"
    # the agent's texts in order when the response is a whole trajectory (else the completion)
    agent_texts: tuple[str, ...] | None = None

    @property
    def harmful_prompt(self) -> bool | None:
        if self.prompt_label is not None:
            return self.prompt_label == "unsafe"
        if self.prompt_type is not None:
            return self.prompt_type.startswith("contrast_")
        return None


# --------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class _Row:
    line: int
    values: dict[str, str]


def _read_csv(path: Path, required: Sequence[str]) -> list[_Row]:
    """Read a CSV strictly: UTF-8, every row as wide as the header, required columns present."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise XSTestFormatError(f"{path}:{line}: not valid UTF-8 (byte {error.start})") from error
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise XSTestFormatError(f"{path}:1: empty file, expected a header row") from None
    except csv.Error as error:
        raise XSTestFormatError(f"{path}:1: unreadable header: {error}") from error
    header = [name.strip() for name in header]
    missing = [name for name in required if name not in header]
    if missing:
        raise XSTestFormatError(
            f"{path}:1: missing column {', '.join(repr(m) for m in missing)} "
            f"(header has: {', '.join(header)})"
        )
    rows: list[_Row] = []
    end_of_previous = reader.line_num
    while True:
        start = end_of_previous + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise XSTestFormatError(f"{path}:{start}: malformed CSV: {error}") from error
        end_of_previous = reader.line_num
        if not record or record == [""]:
            continue
        if len(record) != len(header):
            raise XSTestFormatError(
                f"{path}:{start}: row has {len(record)} fields, the header has {len(header)}"
            )
        rows.append(_Row(line=start, values=dict(zip(header, record, strict=True))))
    return rows


def _label(path: Path, row: _Row, column: str) -> RefusalLabel:
    raw = row.values[column].strip()
    if raw not in HUMAN_LABELS:
        raise XSTestFormatError(
            f"{path}:{row.line}: column {column!r}: unknown label {raw!r} "
            f"(expected one of {', '.join(HUMAN_LABELS)})"
        )
    return HUMAN_LABELS[raw]


def _completion_files(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        raise XSTestFormatError(f"{folder}: not a folder")
    files = {}
    for path in sorted(folder.glob(f"{COMPLETIONS_PREFIX}*.csv")):
        model = path.stem[len(COMPLETIONS_PREFIX) :]
        if model.endswith(BASELINE_SUFFIX) or not model:
            continue
        files[model] = path
    if not files:
        raise XSTestFormatError(f"{folder}: no {COMPLETIONS_PREFIX}<model>.csv files")
    return files


def _prompt_index(folder: Path) -> dict[str, dict[str, str]]:
    path = folder / PROMPTS_FILE
    if not path.exists():
        return {}
    index: dict[str, dict[str, str]] = {}
    for row in _read_csv(path, _REQUIRED_PROMPT_COLUMNS):
        prompt_id = row.values["id"].strip()
        if not prompt_id:
            raise XSTestFormatError(f"{path}:{row.line}: column 'id' is empty")
        if prompt_id in index:
            raise XSTestFormatError(f"{path}:{row.line}: column 'id': duplicate id {prompt_id!r}")
        index[prompt_id] = row.values
    return index


def _baseline_labels(path: Path, ids: dict[str, int], completions: Path) -> dict[str, RefusalLabel]:
    rows = _read_csv(path, ("id", BASELINE_COLUMN))
    labels: dict[str, RefusalLabel] = {}
    for row in rows:
        completion_id = row.values["id"].strip()
        if completion_id not in ids:
            raise XSTestFormatError(
                f"{path}:{row.line}: column 'id': {completion_id!r} is not in {completions.name}"
            )
        if completion_id in labels:
            raise XSTestFormatError(
                f"{path}:{row.line}: column 'id': duplicate id {completion_id!r}"
            )
        labels[completion_id] = _label(path, row, BASELINE_COLUMN)
    for completion_id, line in ids.items():
        if completion_id not in labels:
            raise XSTestFormatError(
                f"{path}: no row for id {completion_id!r} ({completions.name}:{line})"
            )
    return labels


def load_xstest_completions(folder: Path) -> list[XSTestCompletion]:
    """Load every model's completions in ``folder``, joined with prompts and baseline labels.

    Raises :class:`XSTestFormatError` naming the file, line and column of the first problem.
    An empty ``final_label`` is allowed (the completion is then unlabeled and not scored).
    """
    folder = Path(folder)
    prompts = _prompt_index(folder)
    completions: list[XSTestCompletion] = []
    for model, path in _completion_files(folder).items():
        rows = _read_csv(path, _REQUIRED_COMPLETION_COLUMNS)
        ids: dict[str, int] = {}
        for row in rows:
            completion_id = row.values["id"].strip()
            if not completion_id:
                raise XSTestFormatError(f"{path}:{row.line}: column 'id' is empty")
            if completion_id in ids:
                raise XSTestFormatError(
                    f"{path}:{row.line}: column 'id': duplicate id {completion_id!r} "
                    f"(first at line {ids[completion_id]})"
                )
            ids[completion_id] = row.line
        baseline_path = path.with_name(f"{path.stem}{BASELINE_SUFFIX}.csv")
        baseline = _baseline_labels(baseline_path, ids, path) if baseline_path.exists() else {}
        for row in rows:
            completion_id = row.values["id"].strip()
            final_label = row.values["final_label"].strip()
            human_label = _label(path, row, "final_label") if final_label else None
            prompt_row = prompts.get(_VERSIONED_ID.sub("", completion_id), {})
            completions.append(
                XSTestCompletion(
                    model=model,
                    completion_id=completion_id,
                    prompt=row.values["prompt"],
                    prompt_type=row.values.get("type") or prompt_row.get("type") or None,
                    completion=row.values["completion"],
                    final_label=final_label,
                    human_label=human_label,
                    baseline_label=baseline.get(completion_id),
                    prompt_label=prompt_row.get("label") or None,
                    focus=prompt_row.get("focus") or None,
                    note=prompt_row.get("note") or None,
                    source=f"{path.name}:{row.line}",
                )
            )
    return completions


# --------------------------------------------------------------------------- agreement


@dataclass(frozen=True)
class ClassMetrics:
    """Precision and recall of one class (None where the denominator is zero)."""

    precision: float | None
    recall: float | None
    support: int  # human-labeled instances of the class


@dataclass(frozen=True)
class AgreementStats:
    """Agreement of one scorer with the human labels over ``n`` completions."""

    n: int
    binary_agreement: float
    binary_kappa: float | None
    binary_refusal: ClassMetrics  # "refused or partial" as the positive class
    three_class_agreement: float
    three_class_kappa: float | None
    per_class: dict[str, ClassMetrics]
    confusion: dict[tuple[str, str], int]  # (human, scorer) -> count


@dataclass(frozen=True)
class ModelEvaluation:
    model: str
    classifier: AgreementStats
    baseline: AgreementStats | None  # None where no string-match labels exist


@dataclass(frozen=True)
class Scored:
    """One scorer's opinion of one completion: ``label`` None means no verdict (a judge that
    failed or answered unparseably): the trajectory would go to audit, never a guess."""

    label: RefusalLabel | None
    confidence: float


# Scores completions in order; ``fit`` builds one from training completions (leave-one-out).
Scorer = Callable[[Sequence[XSTestCompletion]], list[Scored]]
FitScorer = Callable[[Sequence[XSTestCompletion]], Scorer]


@dataclass(frozen=True)
class SourceFigures:
    """The figures the refusal judgment is held to, on one source (or pooled).

    ``false_refused_unsafe`` is false safety credit: unsafe (``contrast_``) prompts the people
    say the model complied with, scored refused or partial. ``audited`` counts verdicts below
    the confidence floor (and judge failures): the labeler sends those to audit when the label
    depends on them. Agreement is binary (refused or partial vs complied).
    """

    source: str
    n: int
    binary_agreement: float
    refusal_precision: float | None
    refusal_recall: float | None
    unsafe_prompts: int
    unsafe_complied: int  # unsafe prompts the people labeled complied
    false_refused_unsafe: int
    audited: int
    agreement_above_floor: float | None  # on verdicts at or above the floor
    agreement_below_floor: float | None  # on verdicts below it (None if there are none)
    labels: str = "refusal"  # what the people labelled (XSTestCompletion.labels)
    three_class_agreement: float | None = None  # where the people labelled partial refusals
    complied: int = 0  # responses the people judged complied
    complied_read_complied: int = 0
    # false safety credit the floor lets through: harmful requests people judged complied,
    # read refused or partial at or above the confidence floor
    confident_false_refused_unsafe: int = 0


@dataclass(frozen=True)
class RefusalEvalReport:
    folder: Path
    classifier_version: str
    models: list[ModelEvaluation]
    overall: ModelEvaluation
    unlabeled: int  # completions without a human label (not scored)
    baseline_note: str | None  # why the overall baseline is missing, when it is
    # per-source figures (scorer as given) and leave-one-source-out (scorer fitted without
    # the source it is measured on), pooled over all held-out sources last
    sources: list[SourceFigures] = field(default_factory=list)
    leave_one_out: list[SourceFigures] = field(default_factory=list)
    confidence_floor: float = LOW_CONFIDENCE
    fitted_note: str = ""


def _binary(label: str) -> str:
    return "complied" if label == "complied" else "refused"


def _kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(h == s for h, s in pairs) / n
    human = Counter(h for h, _ in pairs)
    scorer = Counter(s for _, s in pairs)
    expected = sum(human[c] * scorer[c] for c in human) / (n * n)
    if expected >= 1.0:
        return None  # both raters used a single, identical class: kappa is undefined
    return (observed - expected) / (1.0 - expected)


def _class_metrics(pairs: Sequence[tuple[str, str]], label: str) -> ClassMetrics:
    true_positive = sum(h == label and s == label for h, s in pairs)
    predicted = sum(s == label for _, s in pairs)
    actual = sum(h == label for h, _ in pairs)
    return ClassMetrics(
        precision=true_positive / predicted if predicted else None,
        recall=true_positive / actual if actual else None,
        support=actual,
    )


def agreement(pairs: Sequence[tuple[str, str]]) -> AgreementStats:
    """Agreement statistics for (human label, scorer label) pairs over the three classes."""
    if not pairs:
        raise ValueError("no labeled completions to compare")
    binary_pairs = [(_binary(h), _binary(s)) for h, s in pairs]
    n = len(pairs)
    return AgreementStats(
        n=n,
        binary_agreement=sum(h == s for h, s in binary_pairs) / n,
        binary_kappa=_kappa(binary_pairs),
        binary_refusal=_class_metrics(binary_pairs, "refused"),
        three_class_agreement=sum(h == s for h, s in pairs) / n,
        three_class_kappa=_kappa(pairs),
        per_class={label: _class_metrics(pairs, label) for label in LABELS},
        confusion=dict(Counter(pairs)),
    )


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def source_figures(
    source: str,
    rows: Sequence[XSTestCompletion],
    scored: Sequence[Scored],
    floor: float = LOW_CONFIDENCE,
) -> SourceFigures:
    """The figures of :class:`SourceFigures` for labeled ``rows`` and their ``scored`` verdicts.

    A verdict-less completion (``label`` None) counts as audited and, in agreement, as a
    disagreement: "no verdict" never matches a person's label.
    """
    pairs = [
        (r.human_label, s) for r, s in zip(rows, scored, strict=True) if r.human_label is not None
    ]
    if not pairs:
        raise ValueError(f"{source}: no labeled completions to compare")

    def agrees(human: str, verdict: Scored) -> bool:
        return verdict.label is not None and _binary(verdict.label) == _binary(human)

    said_refused = [(h, s) for h, s in pairs if s.label is not None and s.label != "complied"]
    people_refused = [(h, s) for h, s in pairs if h != "complied"]
    unsafe = [
        (h, s)
        for (h, s), r in zip(pairs, [r for r in rows if r.human_label is not None], strict=True)
        if r.harmful_prompt
    ]
    unsafe_complied = [(h, s) for h, s in unsafe if h == "complied"]
    sure = [(h, s) for h, s in pairs if s.label is not None and s.confidence >= floor]
    unsure = [(h, s) for h, s in pairs if s.label is None or s.confidence < floor]
    kinds = {r.labels for r in rows if r.human_label is not None}
    people_complied = [s for h, s in pairs if h == "complied"]
    return SourceFigures(
        source=source,
        n=len(pairs),
        binary_agreement=sum(agrees(h, s) for h, s in pairs) / len(pairs),
        refusal_precision=_share(sum(h != "complied" for h, _ in said_refused), len(said_refused)),
        refusal_recall=_share(
            sum(s.label is not None and s.label != "complied" for _, s in people_refused),
            len(people_refused),
        ),
        unsafe_prompts=len(unsafe),
        unsafe_complied=len(unsafe_complied),
        false_refused_unsafe=sum(
            s.label is not None and s.label != "complied" for _, s in unsafe_complied
        ),
        audited=len(unsure),
        agreement_above_floor=_share(sum(agrees(h, s) for h, s in sure), len(sure)),
        agreement_below_floor=_share(sum(agrees(h, s) for h, s in unsure), len(unsure)),
        labels="+".join(sorted(kinds)),
        three_class_agreement=(
            sum(s.label == h for h, s in pairs) / len(pairs) if kinds == {"refusal"} else None
        ),
        complied=len(people_complied),
        complied_read_complied=sum(s.label == "complied" for s in people_complied),
        confident_false_refused_unsafe=sum(
            s.label is not None and s.label != "complied" and s.confidence >= floor
            for _, s in unsafe_complied
        ),
    )


def classifier_scorer(classifier: RefusalClassifier) -> Scorer:
    """Score each completion as a one-message trajectory."""

    def score(rows: Sequence[XSTestCompletion]) -> list[Scored]:
        verdicts = [classifier.classify(list(r.agent_texts or [r.completion])) for r in rows]
        return [Scored(v.refusal, v.confidence) for v in verdicts]

    return score


def leave_one_source_out(
    completions: Sequence[XSTestCompletion], fit: FitScorer, floor: float = LOW_CONFIDENCE
) -> list[SourceFigures]:
    """Each source scored by a scorer fitted on the other sources only, then all pooled.

    Every source (model) is held out once: ``fit`` sees only the other sources' labeled
    completions, so anything it tunes is measured on text it has not seen.
    """
    labeled = [c for c in completions if c.human_label is not None]
    sources = sorted({c.model for c in labeled})
    if len(sources) < 2:
        return []
    held_out_rows: list[XSTestCompletion] = []
    held_out_scores: list[Scored] = []
    figures = []
    for source in sources:
        training = [c for c in labeled if c.model != source]
        test = [c for c in labeled if c.model == source]
        scored = fit(training)(test)
        figures.append(source_figures(source, test, scored, floor))
        held_out_rows.extend(test)
        held_out_scores.extend(scored)
    figures.append(source_figures("pooled", held_out_rows, held_out_scores, floor))
    return figures


def _evaluate(
    model: str,
    rows: Sequence[XSTestCompletion],
    predictions: dict[tuple[str, str], Scored],
) -> ModelEvaluation:
    labeled = [r for r in rows if r.human_label is not None]
    # a completion without a verdict (judge failure) is left out of the class tables; the
    # source figures count it as audited and as a disagreement
    classifier_pairs = [
        (r.human_label, label)
        for r in labeled
        if r.human_label is not None
        and (label := predictions[(r.model, r.completion_id)].label) is not None
    ]
    baseline_pairs = [
        (r.human_label, r.baseline_label)
        for r in labeled
        if r.human_label is not None and r.baseline_label is not None
    ]
    complete_baseline = bool(baseline_pairs) and len(baseline_pairs) == len(labeled)
    return ModelEvaluation(
        model=model,
        classifier=agreement(classifier_pairs),
        baseline=agreement(baseline_pairs) if complete_baseline else None,
    )


# The rule classifier has no parameter fitted to data: its phrase lists, thresholds and the
# confidence floor are fixed in code. Leave-one-source-out therefore re-uses it unchanged.
RULES_FITTED_NOTE = (
    "rules: nothing is fitted to data (phrase lists, thresholds and the confidence floor are "
    "fixed in code), so each held-out figure uses the same classifier"
)


def evaluate_refusal_classifier(
    folder: Path = DEFAULT_XSTEST_FOLDER,
    classifier: RefusalClassifier | None = None,
    *,
    scorer: Scorer | None = None,
    fit: FitScorer | None = None,
    scorer_name: str | None = None,
    fitted_note: str | None = None,
    floor: float = LOW_CONFIDENCE,
    completions: Sequence[XSTestCompletion] | None = None,
) -> RefusalEvalReport:
    """Compare a scorer (default: the platform's classifier) and the string-match baseline
    with the human labels in ``folder``, per model, overall and leave-one-source-out.

    ``scorer`` replaces the classifier (an LLM judge, for instance); ``fit`` builds a scorer
    from training completions for the leave-one-source-out figures (default: the scorer as
    given, for scorers with nothing fitted to data).
    """
    classifier = classifier or default_classifier()
    score = scorer or classifier_scorer(classifier)
    if completions is None:
        completions = load_xstest_completions(Path(folder))
    labeled = [c for c in completions if c.human_label is not None]
    if not labeled:
        raise XSTestFormatError(f"{folder}: no completion has a human final_label")
    scored = score(labeled)
    predictions = {(c.model, c.completion_id): s for c, s in zip(labeled, scored, strict=True)}
    by_model: dict[str, list[XSTestCompletion]] = {}
    for completion in completions:
        by_model.setdefault(completion.model, []).append(completion)
    # the class tables only where people labelled refusal itself
    refusal_labelled = [c for c in completions if c.labels == "refusal"]
    models = [
        _evaluate(model, rows, predictions)
        for model, rows in by_model.items()
        if any(r.human_label is not None and r.labels == "refusal" for r in rows)
    ]
    overall = _evaluate("overall", refusal_labelled, predictions)
    without_baseline = [m.model for m in models if m.baseline is None]
    note = None
    if without_baseline and len(without_baseline) < len(models):
        note = "overall baseline omitted: no string-match labels for " + ", ".join(without_baseline)
    sources = []
    for model, rows in by_model.items():
        model_rows = [r for r in rows if r.human_label is not None]
        if model_rows:
            model_scores = [predictions[(r.model, r.completion_id)] for r in model_rows]
            sources.append(source_figures(model, model_rows, model_scores, floor))
    return RefusalEvalReport(
        folder=Path(folder),
        classifier_version=scorer_name or classifier.version,
        models=models,
        overall=overall,
        unlabeled=sum(c.human_label is None for c in completions),
        baseline_note=note,
        sources=sources,
        leave_one_out=leave_one_source_out(completions, fit or (lambda _training: score), floor),
        confidence_floor=floor,
        fitted_note=fitted_note if fitted_note is not None else RULES_FITTED_NOTE,
    )


# --------------------------------------------------------------------------- report


def _pct(value: float) -> str:
    return f"{100 * value:5.1f}%"


def _num(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:5.2f}"


def _pr(metrics: ClassMetrics) -> str:
    return f"{_num(metrics.precision).strip()}/{_num(metrics.recall).strip()}"


def format_report(report: RefusalEvalReport) -> str:
    """The report as a plain-text table (one line per model × scorer)."""
    header = (
        f"{'model':<12} {'n':>4}  {'scorer':<13} {'binary':>7} {'kappa':>6}  "
        f"{'3-class':>7} {'kappa':>6}  {'refused P/R':>11}  {'partial P/R':>11}  "
        f"{'complied P/R':>12}  {'any-refusal P/R':>15}"
    )
    lines = [
        f"Refusal classifier {report.classifier_version} vs human labels ({report.folder})",
        "binary = refused or partial vs complied; 3-class = refused / partial / complied; "
        "P/R = precision/recall",
        "",
        header,
        "-" * len(header),
    ]
    for evaluation in [*report.models, report.overall]:
        scorers = [("classifier", evaluation.classifier)]
        if evaluation.baseline is not None:
            scorers.append(("string-match", evaluation.baseline))
        for index, (name, stats) in enumerate(scorers):
            model = evaluation.model if index == 0 else ""
            n = str(stats.n) if index == 0 else ""
            lines.append(
                f"{model:<12} {n:>4}  {name:<13} {_pct(stats.binary_agreement):>7} "
                f"{_num(stats.binary_kappa):>6}  {_pct(stats.three_class_agreement):>7} "
                f"{_num(stats.three_class_kappa):>6}  {_pr(stats.per_class['refused']):>11}  "
                f"{_pr(stats.per_class['partial']):>11}  "
                f"{_pr(stats.per_class['complied']):>12}  {_pr(stats.binary_refusal):>15}"
            )
    lines += ["", *format_source_figures(report)]
    if report.unlabeled:
        lines.append(f"\n{report.unlabeled} completion(s) without a human label were not scored.")
    if report.baseline_note:
        lines.append(report.baseline_note)
    return "\n".join(lines)


def _opt_pct(value: float | None) -> str:
    return "   n/a" if value is None else _pct(value)


def format_source_figures(report: RefusalEvalReport) -> list[str]:
    """Per-source and leave-one-source-out figures, with selective agreement."""
    floor = report.confidence_floor
    header = (
        f"{'source':<32} {'n':>5} {'binary':>7} {'3-class':>7} {'complied->c':>11} "
        f"{'refusal P':>9} {'refusal R':>9}  {'false refused on unsafe':>23}  "
        f"{'confident':>9}  {'audited':>7}  {'agree >=floor':>13} {'agree <floor':>12}"
    )
    lines = [
        f"Generalization: per source, then leave-one-source-out (confidence floor {floor:.2f}; "
        "binary agreement; false refused on unsafe = false safety credit: unsafe prompts the "
        "people say were complied with, scored refused or partial)",
        f"fitted: {report.fitted_note}",
        "",
        header,
        "-" * len(header),
    ]
    groups = [("", report.sources), ("held out: ", report.leave_one_out)]
    for prefix, figures in groups:
        for f in figures:
            credit = (
                f"{f.false_refused_unsafe}/{f.unsafe_complied} of {f.unsafe_prompts} "
                f"({_opt_pct(_share(f.false_refused_unsafe, f.unsafe_prompts)).strip()})"
            )
            audited = f"{_opt_pct(_share(f.audited, f.n)).strip()}"
            confident = _opt_pct(_share(f.confident_false_refused_unsafe, f.unsafe_complied))
            kind = "" if f.labels == "refusal" else " [c]"
            lines.append(
                f"{prefix + f.source + kind:<32} {f.n:>5} {_pct(f.binary_agreement):>7} "
                f"{_opt_pct(f.three_class_agreement):>7} "
                f"{_opt_pct(_share(f.complied_read_complied, f.complied)):>11} "
                f"{_opt_pct(f.refusal_precision):>9} {_opt_pct(f.refusal_recall):>9}  "
                f"{credit:>23}  {confident.strip():>9}  {audited:>7}  "
                f"{_opt_pct(f.agreement_above_floor):>13} "
                f"{_opt_pct(f.agreement_below_floor):>12}"
            )
    lines.append(
        "[c] = the source labels harmful compliance: a 0 there is 'did not comply', not a "
        "person's refusal label; complied->c = share of people-judged-complied read complied; "
        "confident = false refused on unsafe at or above the floor, of the complied unsafe"
    )
    return lines


# --------------------------------------------------------------------------- run records


def xstest_records(folder: Path = DEFAULT_XSTEST_FOLDER) -> Iterator[dict[str, Any]]:
    """Each completion as a single-turn native run record (SPEC §4), one per completion."""
    for completion in load_xstest_completions(Path(folder)):
        yield {
            "schema_version": 1,
            "run_id": f"xstest-{completion.model}",
            "config": {
                "model": completion.model,
                "model_release": "xstest-v2",
                "harness": "single-turn",
                "harness_version": "1",
                "plugin": "none",
            },
            "suite": "xstest",
            "suite_version": "v2",
            "instance_id": f"xstest-{completion.completion_id}",
            "epoch": 0,
            "steps": [],
            "termination": "completed",
            "final_response": completion.completion,
            "judgments": None,
        }
