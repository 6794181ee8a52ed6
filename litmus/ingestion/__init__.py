"""Ingestion (SPEC §4, §10): landed run files into the immutable raw store and validated rows, every
rejected record quarantined with its file, line and field; suite files into the suite catalog."""
