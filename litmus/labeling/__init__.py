"""The LITMUS labeler (SPEC §5): evidence extraction and the decision boundary.

``reference`` is the executable spec over one trajectory; ``sql`` is the production path over
a whole partition in DuckDB. A property-based test proves they agree.
"""

# 1.2.0: post-state evidence (SPEC §5), post_state_missing; 1.1.0: instances without an oracle
LABELER_VERSION = "1.2.0"
# The rule classifier's version, here so that status can judge staleness without compiling
# the rules (importing litmus.labeling.refusal compiles about 130 patterns).
REFUSAL_RULES_VERSION = "refusal-rules-1.2"
