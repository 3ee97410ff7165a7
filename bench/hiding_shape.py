"""Pages that hide their text from a text reader (issue 38, "What the reader sees"): the
shape every technique's fixtures share.

Minimal version (helper **scripted**'s branch; helper **cascade** owns this module and its
sites): :class:`HiddenPage` and the registry :data:`TECHNIQUES`, technique name -> module
``bench.hiding_<name>`` exposing ``disguise(title, text, rng) -> HiddenPage``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HiddenPage:
    """The full HTML of a chapter page whose text, as a person sees it in a browser, is the
    chapter's, and the extra files it references by site-root path (stylesheets, fonts,
    images, JSON)."""

    html: str
    files: dict[str, bytes] = field(default_factory=dict)


TECHNIQUES: dict[str, str] = {
    "scripts": "bench.hiding_scripts",
}
"""Technique name -> the module whose ``disguise`` serves a chapter so."""
