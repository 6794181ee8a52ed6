"""The LITMUS labeler (SPEC §5): evidence extraction and the decision boundary.

``sql`` is the one production path, over a whole partition in DuckDB. The executable spec over
one trajectory is the test oracle tests/labeler_reference.py; a property-based test proves
they agree.
"""

# 1.2.0: post-state evidence (SPEC §5), post_state_missing; 1.1.0: instances without an oracle
LABELER_VERSION = "1.2.0"
# The refusal classifier's version (rules + learned model), here so that status can judge
# staleness without compiling the rules (importing litmus.labeling.refusal compiles about 130
# patterns). The model's part is litmus/data/refusal_model.json's version (a test checks they
# match): retraining changes the classifier's version, and so re-scoring follows.
REFUSAL_MODEL_VERSION = "refusal-lr-9541b6840020"
REFUSAL_RULES_VERSION = f"refusal-rules-1.8+{REFUSAL_MODEL_VERSION}"
