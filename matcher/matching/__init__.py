"""Matching: a page's candidates, their verification, and what is recorded of a match."""
