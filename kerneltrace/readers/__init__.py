"""Readers: one module per input format; they return dataclasses and raise InputError."""
