"""Placeholder until bench/make_reference_frequencies.py generates this module."""

REFERENCE_FREQUENCIES: tuple[float, ...] = (1 / 23,) * 23
