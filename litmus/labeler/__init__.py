"""The LITMUS labeler (SPEC §5): evidence extraction and the decision boundary.

``reference`` is the executable spec over one trajectory; ``sql`` is the production path over
a whole partition in DuckDB. A property-based test proves they agree.
"""

LABELER_VERSION = "1.0.0"
