"""Every use of a private API of Dagster, dagster-dbt, dbt and the interpreter's exit in
``litmus_dagster/``, and only here; each module's test (tests/test_adapters.py) fails loudly
when an upgrade breaks what it builds on. ``litmus/adapters.py`` holds the domain's."""
