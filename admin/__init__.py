"""The operator's interfaces: the ``fptrack`` command line (and, later, the web platform)."""
