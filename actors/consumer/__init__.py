"""Consumer groups (classic protocol) and committed offsets: the pure decider
(:mod:`actors.consumer.classic`), the actor messages (:mod:`actors.consumer.messages`) and the
per-group :class:`actors.consumer.actor.ConsumerGroupActor`."""
