"""Comparison of two runs' hotspot documents and the regression gate (entry point: document)."""
