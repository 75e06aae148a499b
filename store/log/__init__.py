"""A partition's local log, split along Kafka's own storage classes
(storage/src/main/java/org/apache/kafka/storage/internals/…):

* :mod:`store.log.config`: :class:`~store.log.config.LogConfig` (Kafka ``LogConfig``);
* :mod:`store.log.errors`: the log's errors with Kafka's error names and codes;
* :mod:`store.log.checkpoint`: checkpoint-file helpers (Kafka ``CheckpointFile``);
* :mod:`store.log.epoch_cache`: ``EpochEntry``, ``LeaderEpochFileCache`` (Kafka ``LeaderEpochFileCache``);
* :mod:`store.log.segment`: ``LogSegment`` with its offset and time indexes (Kafka ``LogSegment``,
  ``OffsetIndex``, ``TimeIndex``);
* :mod:`store.log.log`: ``PartitionLog`` and its result types (Kafka ``UnifiedLog``/``LocalLog``).

Import from the modules by name; this package re-exports nothing.
"""
