"""What the fixture servers serve, generated: sites, corpora and texts shared by the tests and
the benchmarks (the benchmarks import them from here; the tests never import ``bench``).

- corpora: :mod:`~tests.sites.eval_corpus` (works and pirate pages, synthetic or of real
  text), :mod:`~tests.sites.corpus` (Chinese text of Debian packages),
  :mod:`~tests.sites.english`, :mod:`~tests.sites.textconv` (simplified/traditional,
  encodings), :mod:`~tests.sites.hostile_works` (works files that are not works);
- site pages: :mod:`~tests.sites.site_html` (novel, news and document sites' chrome),
  :mod:`~tests.sites.site_text`, :mod:`~tests.sites.site_shapes` and
  :mod:`~tests.sites.edition_shape` (the accuracy evaluation's site shapes);
- hidden text: :mod:`~tests.sites.hiding_shape` and its techniques
  (:mod:`~tests.sites.hiding_css`, :mod:`~tests.sites.hiding_fonts`,
  :mod:`~tests.sites.hiding_images`, :mod:`~tests.sites.hiding_scripts`),
  :mod:`~tests.sites.text_images` (chapters drawn as images), :mod:`~tests.sites.font_sites`
  (web fonts with shuffled glyphs);
- the tests' own sites: :mod:`~tests.sites.script_site` and :mod:`~tests.sites.hiding_site`
  (text loaded by script), :mod:`~tests.sites.downloads` (a whole-book ZIP).
"""
