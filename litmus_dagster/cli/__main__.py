"""``python -m litmus_dagster.cli``."""

from litmus_dagster.cli import console_main

console_main()
