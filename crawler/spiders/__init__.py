"""Spiders of the fptrack crawler: one generic spider configured per site."""
