"""Tiered-storage metadata (KIP-405): Kafka's RemoteLogMetadataManager for Shoal.

* :mod:`actors.rlmm.cache` — ``RemoteLogMetadataCache`` (pure, Kafka's exact semantics);
* :mod:`actors.rlmm.store` — one metadata partition's fold, deciders and snapshots (pure);
* :mod:`actors.rlmm.partitioner` — ``metadata_partition_for`` (Kafka's partitioner);
* :mod:`actors.rlmm.manager` — the ``RemoteLogMetadataManager`` interface, the event-sourced
  in-process implementation, the NotReady and Swappable facades;
* :mod:`actors.rlmm.actor` / :mod:`actors.rlmm.messages` — ``RlmmPartitionActor``, one per metadata partition.

The value types (``TopicIdPartition``, ``RemoteLogSegmentMetadata`` …) and Kafka's exceptions live
one layer down, in :mod:`events.rlmm_types` and :mod:`events.rlmm_errors`, since ``events/`` and
``store/`` use them too (``../shared/DESIGN.md``, Layering).

Importing this package does not import Thespian; import :mod:`actors.rlmm.actor` for the actor.
"""
