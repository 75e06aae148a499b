"""Tiered-storage metadata (KIP-405): Kafka's RemoteLogMetadataManager for Shoal.

* :mod:`actors.rlmm.metadata` — the value types (``TopicIdPartition``, ``RemoteLogSegmentMetadata`` …);
* :mod:`actors.rlmm.errors` — Kafka's exceptions;
* :mod:`actors.rlmm.cache` — ``RemoteLogMetadataCache`` (pure, Kafka's exact semantics);
* :mod:`actors.rlmm.store` — one metadata partition's fold, deciders and snapshots (pure);
* :mod:`actors.rlmm.partitioner` — ``metadata_partition_for`` (Kafka's partitioner);
* :mod:`actors.rlmm.manager` — the ``RemoteLogMetadataManager`` interface, the event-sourced
  in-process implementation, the NotReady and Swappable facades;
* :mod:`actors.rlmm.actor` / :mod:`actors.rlmm.messages` — ``RlmmPartitionActor``, one per metadata partition.

Importing this package does not import Thespian; import :mod:`actors.rlmm.actor` for the actor.
"""
