"""``metadata_partition_for`` against Kafka's RemoteLogMetadataTopicPartitioner (reference §5.2):
Kafka's murmur2 test vectors, the worked example of the reference (ConsumerTaskTest's topic id),
a step-by-step hand computation, and ``java.util.Objects.hash`` from a real JDK."""

from __future__ import annotations

import shutil
import subprocess
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.rlmm_types import TopicIdPartition, uuid_from_kafka_str, uuid_lsb, uuid_msb
from actors.rlmm.partitioner import java_objects_hash, metadata_partition_for, murmur2, to_positive
from tests.conftest import require

SAMPLE_ID = uuid_from_kafka_str("Bp9TDduJRGa9Q5rlvCJOxg")


def test_murmur2_kafka_vectors():
    """UtilsTest#testMurmur2."""
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"abc") == 479470107


def test_uuid_bits_of_reference_topic_id():
    assert uuid_msb(SAMPLE_ID) == 477191404507448422
    assert uuid_lsb(SAMPLE_ID) == -4808829665607004474


def _wrap32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def test_objects_hash_by_hand():
    """Objects.hash(lsb, msb, partition) = 31*(31*(31*1 + LongHash(lsb)) + LongHash(msb)) + partition
    with the reference's LongHash values (lsb → 23188515, msb → -585754773)."""
    for partition in range(4):
        by_hand = _wrap32(31 * _wrap32(31 * _wrap32(31 * 1 + 23188515) + -585754773) + partition)
        assert java_objects_hash(uuid_lsb(SAMPLE_ID), uuid_msb(SAMPLE_ID), partition) == by_hand


def test_testCanProcessRecord_partitions():
    """P1 ConsumerTaskTest: with 5 metadata partitions sample-0,1,2 share one partition and
    sample-3 differs (reference's computed values 2,2,2,4)."""
    got = [metadata_partition_for(TopicIdPartition(SAMPLE_ID, f"sample", p), 5) for p in range(4)]
    assert got == [2, 2, 2, 4]


def test_topic_name_is_not_hashed():
    a = TopicIdPartition(SAMPLE_ID, "a", 1)
    b = TopicIdPartition(SAMPLE_ID, "completely-different", 1)
    assert metadata_partition_for(a, 50) == metadata_partition_for(b, 50)


def test_all_zero_and_all_ones_topic_ids_collide():
    """Surprise 1: LongHash(0) == LongHash(-1) == 0, so these two ids hash the same."""
    zero = TopicIdPartition(uuid.UUID(int=0), "t", 0)
    ones = TopicIdPartition(uuid.UUID(int=2**128 - 1), "t", 0)
    for n in (1, 7, 50, 1000):
        assert metadata_partition_for(zero, n) == metadata_partition_for(ones, n)


def test_invalid_arguments():
    with pytest.raises(TypeError):
        metadata_partition_for(None, 50)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        metadata_partition_for(TopicIdPartition(SAMPLE_ID, "t", 0), 0)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**128 - 1), st.integers(0, 2**31 - 1), st.integers(1, 10_000))
def test_partition_in_range_and_matches_formula(topic_id, partition, n):
    tid = uuid.UUID(int=topic_id)
    p = metadata_partition_for(TopicIdPartition(tid, "t", partition), n)
    assert 0 <= p < n
    h = java_objects_hash(uuid_lsb(tid), uuid_msb(tid), partition)
    assert p == to_positive(murmur2(h.to_bytes(4, "big", signed=True))) % n


JAVA_SRC = """
import java.util.Objects;
public class H {
    public static void main(String[] a) {
        for (int i = 0; i + 2 < a.length; i += 3) {
            long lsb = Long.parseLong(a[i]); long msb = Long.parseLong(a[i + 1]); int p = Integer.parseInt(a[i + 2]);
            System.out.println(Objects.hash(lsb, msb, p));
        }
    }
}
"""


def test_objects_hash_matches_the_jdk(tmp_path):
    """The JDK's own ``java.util.Objects.hash(Long, Long, Integer)`` agrees with ours."""
    require(shutil.which("javac") is not None and shutil.which("java") is not None, "Java 17 (javac) not installed")
    (tmp_path / "H.java").write_text(JAVA_SRC)
    subprocess.run(["javac", "H.java"], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    ids = [SAMPLE_ID, uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)] + [uuid.UUID(int=(i * 0x9E3779B97F4A7C15F39CC0605CEDC834) % 2**128) for i in range(1, 30)]
    args, expected = [], []
    for i, tid in enumerate(ids):
        part = (i * 7919) % 100_000
        args += [str(uuid_lsb(tid)), str(uuid_msb(tid)), str(part)]
        expected.append(java_objects_hash(uuid_lsb(tid), uuid_msb(tid), part))
    out = subprocess.run(["java", "-cp", str(tmp_path), "H", *args], check=True, capture_output=True, text=True, timeout=120)
    assert [int(x) for x in out.stdout.split()] == expected
