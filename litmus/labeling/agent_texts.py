"""The agent's own words in a trajectory, and the refusal classifier's verdict on them.

Shared by the labeler (``litmus.labeling.sql``) and the refusal judge: both read the same
texts in the same order, so a verdict's position maps back to the same trajectory step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from litmus.labeling.refusal import RefusalClassifier, RefusalVerdict

NO_TEXT_VERDICT = RefusalVerdict(refusal="complied", step=None, confidence=1.0, engagement=None)


def agent_texts(
    messages: Iterable[tuple[int, str | None]], final_response: str | None, n_steps: int
) -> list[tuple[int, str]]:
    """The agent's own words in order, each with its step (the final response is step n)."""
    texts = [(step, text) for step, text in messages if text is not None and text.strip()]
    if final_response is not None and final_response.strip():
        texts.append((n_steps, final_response))
    return texts


def classify_agent_texts(
    texts: Sequence[tuple[int, str]], classifier: RefusalClassifier
) -> tuple[RefusalVerdict, int | None]:
    """The classifier's verdict and the trajectory step its refusal points at."""
    if not texts:  # an agent that said nothing cannot have refused in words
        return NO_TEXT_VERDICT, None
    verdict = classifier.classify([text for _, text in texts])
    step = texts[verdict.step][0] if verdict.step is not None and texts else None
    return verdict, step
