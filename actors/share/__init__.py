"""Share groups (KIP-932): the pure share-partition state machine (:mod:`actors.share.partition`),
the share coordinator's durable state (:mod:`actors.share.state_store`), Kafka's share errors
(:mod:`actors.share.errors`), membership, assignment, share sessions and group configs, and the
``ShareGroupActor`` that owns one group's share partitions."""
