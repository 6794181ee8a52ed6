"""Fail-closed publication gates (SPEC §7): the Great Expectations suites run over frames DuckDB
computed, and the one decision of what is published and why not."""
