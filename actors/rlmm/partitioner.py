"""``metadata_partition_for``: which ``__remote_log_metadata`` partition holds a user partition's
events — identical to Kafka's ``RemoteLogMetadataTopicPartitioner#metadataPartition``.

Algorithm (reference §5.2; ``storage/.../metadata/storage/RemoteLogMetadataTopicPartitioner.java``)::

    h32   = Objects.hash(topicId.leastSignificantBits, topicId.mostSignificantBits, partition)
          = 31*(31*(31*1 + longHash(lsb)) + longHash(msb)) + partition   (int32 wrap-around; LSB first)
    bytes = h32 as 4 big-endian bytes
    p     = toPositive(murmur2(bytes)) % num_partitions

``longHash(v) = (int)(v ^ (v >>> 32))`` (``Long.hashCode``); ``murmur2`` is
``org.apache.kafka.common.utils.Utils#murmur2`` (seed ``0x9747b28c``) and ``toPositive(x) = x &
0x7fffffff``. The topic name is not hashed.
"""

from __future__ import annotations

from events.rlmm_types import TopicIdPartition, uuid_lsb, uuid_msb

__all__ = ["java_objects_hash", "metadata_partition_for", "murmur2", "to_positive"]

_M32 = 0xFFFFFFFF


def _to_int32(x: int) -> int:
    x &= _M32
    return x - 0x1_0000_0000 if x & 0x8000_0000 else x


def _long_hash(v: int) -> int:
    """``Long.hashCode(v)``: ``(int)(v ^ (v >>> 32))`` for a signed 64-bit ``v``."""
    u = v & 0xFFFF_FFFF_FFFF_FFFF
    return _to_int32(u ^ (u >> 32))


def java_objects_hash(lsb: int, msb: int, partition: int) -> int:
    """``Objects.hash(Long lsb, Long msb, Integer partition)`` as a signed 32-bit int."""
    h = 1
    for element_hash in (_long_hash(lsb), _long_hash(msb), _to_int32(partition)):
        h = (31 * h + element_hash) & _M32
    return _to_int32(h)


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2(byte[])``: 32-bit murmur2 with seed ``0x9747b28c``, returned as a
    signed 32-bit int (``"21"`` → -973932308, ``"foobar"`` → -790332482)."""
    length = len(data)
    m = 0x5BD1E995
    r = 24
    h = (0x9747B28C ^ length) & _M32
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * m) & _M32
        k ^= k >> r
        k = (k * m) & _M32
        h = (h * m) & _M32
        h ^= k
    rest = length % 4
    base = length & ~3
    if rest == 3:
        h ^= data[base + 2] << 16
    if rest >= 2:
        h ^= data[base + 1] << 8
    if rest >= 1:
        h ^= data[base]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return _to_int32(h)


def to_positive(n: int) -> int:
    """``Utils.toPositive``: ``n & 0x7fffffff``."""
    return n & 0x7FFFFFFF


def metadata_partition_for(topic_id_partition: TopicIdPartition, num_partitions: int) -> int:
    """The metadata partition (0 ≤ p < ``num_partitions``) of ``topic_id_partition``, exactly as
    Kafka's ``RemoteLogMetadataTopicPartitioner``. Raises ``TypeError`` for ``None`` and
    ``ValueError`` if ``num_partitions`` < 1 (``remote.log.metadata.topic.num.partitions`` ≥ 1)."""
    if topic_id_partition is None:
        raise TypeError("TopicPartition can not be null")
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    tid = topic_id_partition.topic_id
    h = java_objects_hash(uuid_lsb(tid), uuid_msb(tid), topic_id_partition.partition)
    return to_positive(murmur2((h & _M32).to_bytes(4, "big"))) % num_partitions
