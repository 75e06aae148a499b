"""The built-in domain projections; importing this package registers each one.

Each module registers a factory with :func:`projections.model.register_projection`; the factory
imports the domain's events and ``evolve`` lazily and raises
:class:`projections.model.DomainNotAvailable` when they are not importable.

=============  ==============================================  ==========================================
domain         Python fold (the actor's own)                   SQL fold (DuckDB and Spark)
=============  ==============================================  ==========================================
share_group    ``actors.share.membership.evolve``              groups, members, assignment
share          ``actors.share.group_state.ShareGroupState.apply``    share partitions and their in-flight ranges,
                                                               from the outcomes the events record
                                                               (a partition with a v1 event is refused)
rlmm           ``actors.rlmm.store.MetadataPartitionState``    segments, segment epochs, partitions
                                                               (the leader-epoch index is Python-only)
controller     ``actors.controller.state.evolve``              topics, configs, partitions, replicas/ISR,
                                                               holds, dependencies, frontiers, producer ids
consumer_group ``actors.consumer.classic.ClassicGroup.apply``    groups, members (last GroupMetadata),
                                                               committed offsets (last per partition)
=============  ==============================================  ==========================================
"""

from projections.domains import consumer_group, controller, rlmm, share, share_group  # noqa: F401
