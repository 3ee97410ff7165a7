"""Segment references: what the index keeps of a work segment's verification data.

The data itself (:func:`matcher.matching.prepared.segment_blob`) stays in MongoDB; the index
holds a 24-byte reference to it, and these functions make and read one."""

from __future__ import annotations

import struct

import xxhash
from bson import ObjectId

_REF = struct.Struct("<4sQ12s")  # tag, xxh3-64 of the segment blob, the work's ObjectId
_REF_TAG = b"FPR1"


def segment_ref(blob: bytes, work_id: ObjectId) -> bytes:
    """What the index keeps of a work segment's verification data (24 bytes): a tag, the
    blob's xxh3-64 digest and the work's id. The blob itself stays in MongoDB, read for
    candidate segments only (:class:`matcher.matching.segment_cache.SegmentData`), by the work's id:
    the fingerprints' shard key, so a sharded store answers from the shards holding it."""
    return _REF.pack(_REF_TAG, xxhash.xxh3_64_intdigest(blob), work_id.binary)


def is_segment_ref(value: bytes) -> bool:
    """Whether an index value is a :func:`segment_ref` (else it is a whole segment blob,
    as indexes built before references kept it)."""
    return len(value) == _REF.size and value[:4] == _REF_TAG


def ref_work(ref: bytes) -> ObjectId:
    """The work id of a :func:`segment_ref`."""
    return ObjectId(_REF.unpack(ref)[2])
