"""Human-labelled responses from every development source, in one shape.

The refusal judgment is trained and measured on these (``litmus eval-refusal``,
``python -m litmus.labeling.refusal_train``). Each source says what its labels mean:

- ``refusal`` labels (XSTest v2, one source per model): complied / refused / partial, people's
  refusal judgment itself;
- ``harmful_compliance`` labels (HarmBench validation, GPTFuzz, purseclab, AgentHarm
  transcripts): 1 = the response produced what a harmful request asked. A 1 is a reliable
  ``complied``; a 0 means "did not comply", usually a refusal but also an empty, off-topic or
  harmless answer, so it is stored as ``refused`` with ``labels = "harmful_compliance"`` and
  read as "not complied", never as a person's refusal label.

Folder layout and provenance: ``../shared/data/README.md``. Bad input raises
:class:`XSTestFormatError` naming the file and the record.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from litmus import SHARED_DATA_DIR
from litmus.labeling.refusal_eval import (
    XSTestCompletion,
    XSTestFormatError,
    _read_csv,
    load_xstest_completions,
)

HARMBENCH_FILE = Path("refusal_dev/harmbench_val/text_behaviors_val_set.json")
GPTFUZZ_FILES = (Path("refusal_dev/gptfuzz/train.csv"), Path("refusal_dev/gptfuzz/evaluate.csv"))
PURSECLAB_FILE = Path("refusal_dev/purseclab/manual_data.csv")
TRANSCRIPTS_FILE = Path("agentharm_transcripts/agentharm_trajectories.json")
XSTEST_FOLDER = Path("xstest_dev")

# Sources the shipped model is trained on; the AgentHarm transcripts are machine-labelled
# (AgentHarm's grader, which also scores the tool calls) and are only measured.
TRAINING_SOURCES = (
    "xstest_gpt4",
    "xstest_llama2orig",
    "harmbench_val",
    "gptfuzz",
    "purseclab",
)


def _response(
    source: str,
    ident: str,
    prompt: str,
    text: str,
    complied: bool,
    where: str,
    agent_texts: tuple[str, ...] | None = None,
) -> XSTestCompletion:
    return XSTestCompletion(
        model=source,
        completion_id=ident,
        prompt=prompt,
        prompt_type=None,
        completion=text,
        final_label="1" if complied else "0",
        human_label="complied" if complied else "refused",
        baseline_label=None,
        prompt_label="unsafe",  # every request of these sources is a harmful one
        focus=None,
        note=None,
        source=where,
        labels="harmful_compliance",
        agent_texts=agent_texts,
    )


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise XSTestFormatError(f"{path}: unreadable JSON: {error}") from error


def load_harmbench(root: Path) -> list[XSTestCompletion]:
    """HarmBench's classifier validation set: complied when at least two of three people say
    the generation is an instance of the behaviour."""
    path = root / HARMBENCH_FILE
    data = _load_json(path)
    if not isinstance(data, dict):
        raise XSTestFormatError(f"{path}: expected an object of behaviours")
    rows = []
    for behaviour, items in data.items():
        for index, item in enumerate(items):
            where = f"{path.name}:{behaviour}[{index}]"
            try:
                votes = sum(int(item[f"human_{k}"]) for k in range(3))
                text, prompt = item["generation"], item["test_case"]
            except (KeyError, TypeError, ValueError) as error:
                raise XSTestFormatError(f"{where}: missing or bad field: {error}") from error
            rows.append(_response("harmbench_val", where, prompt, text, votes >= 2, where))
    return rows


def load_gptfuzz(root: Path) -> list[XSTestCompletion]:
    """GPTFuzz's hand-labelled gpt-3.5-turbo jailbreak responses (1 = jailbroken)."""
    rows = []
    for relative in GPTFUZZ_FILES:
        path = root / relative
        for row in _read_csv(path, ("question", "Response", "label")):
            label = row.values["label"].strip()
            if label not in ("0", "1"):
                raise XSTestFormatError(f"{path}:{row.line}: column 'label': {label!r}")
            where = f"{path.name}:{row.line}"
            rows.append(
                _response(
                    "gptfuzz",
                    where,
                    row.values["question"],
                    row.values["Response"],
                    label == "1",
                    where,
                )
            )
    return rows


def load_purseclab(root: Path) -> list[XSTestCompletion]:
    """purseclab's manual labels: complied when the response is informative (False covers
    refusals and empty "Sure, I can…" answers)."""
    path = root / PURSECLAB_FILE
    rows = []
    column = "manual_informativeness_label"
    for row in _read_csv(path, ("prompt", "response", column)):
        label = row.values[column].strip()
        if label not in ("True", "False"):
            raise XSTestFormatError(f"{path}:{row.line}: column {column!r}: {label!r}")
        where = f"{path.name}:{row.line}"
        rows.append(
            _response(
                "purseclab",
                where,
                row.values["prompt"],
                row.values["response"],
                label == "True",
                where,
            )
        )
    return rows


def _transcript_agent_texts(turns: list[dict[str, Any]]) -> Iterator[str]:
    """What the agent says in a transcript: its thoughts and its final ``Complete`` response
    (other actions are tool calls, which the classifier never reads)."""
    for turn in turns:
        if turn.get("role") != "agent":
            continue
        if turn.get("thought"):
            yield str(turn["thought"])
        action = str(turn.get("action") or "")
        if action.startswith("Complete{"):
            try:
                yield str(ast.literal_eval(action[len("Complete") :])["response"])
            except (ValueError, SyntaxError, KeyError, TypeError):
                continue


def load_agentharm_transcripts(root: Path) -> list[XSTestCompletion]:
    """AgentHarm transcripts, scored as whole trajectories; label 1 = AgentHarm's grader found
    the agent unsafe (machine labels: a refusal after a harmful call is 0 there)."""
    path = root / TRANSCRIPTS_FILE
    data = _load_json(path)
    rows = []
    for index, record in enumerate(data):
        where = f"{path.name}[{index}]"
        try:
            turns = record["contents"][0]
            label = int(record["label"])
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise XSTestFormatError(f"{where}: missing or bad field: {error}") from error
        texts = tuple(t for t in _transcript_agent_texts(turns) if t.strip())
        if not texts:
            continue
        prompt = next((str(t.get("content", "")) for t in turns if t.get("role") == "user"), "")
        rows.append(
            _response("agentharm_transcripts", where, prompt, texts[-1], label == 1, where, texts)
        )
    return rows


def load_dev_sources(root: Path = SHARED_DATA_DIR) -> list[XSTestCompletion]:
    """Every labelled development response under ``root`` (``../shared/data``), XSTest's
    models first; a source whose files are absent is skipped."""
    rows: list[XSTestCompletion] = []
    if (root / XSTEST_FOLDER).is_dir():
        rows += [
            _renamed(c, f"xstest_{c.model}") for c in load_xstest_completions(root / XSTEST_FOLDER)
        ]
    loaders = (
        (HARMBENCH_FILE, load_harmbench),
        (GPTFUZZ_FILES[0], load_gptfuzz),
        (PURSECLAB_FILE, load_purseclab),
        (TRANSCRIPTS_FILE, load_agentharm_transcripts),
    )
    for marker, load in loaders:
        if (root / marker).exists():
            rows += load(root)
    return rows


def _renamed(completion: XSTestCompletion, model: str) -> XSTestCompletion:
    from dataclasses import replace

    return replace(completion, model=model)
