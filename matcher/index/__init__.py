"""The Redis index layer of the matcher: the simhash index and the window postings, packed
into Redis strings (:mod:`matcher.index.packed`), the IO they do on a server or a Redis
Cluster (:mod:`matcher.index.redis_io`), and the two indexes of one kind of owner
(:mod:`matcher.index.indexes`). Key names come from :mod:`matcher.keys`, clients from
:mod:`matcher.index.redis_clients`.
"""
