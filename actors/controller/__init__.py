"""The controller domain: cluster metadata (topics, partitions, topic ids, configs, leader epochs),
storage collections with since/upper frontiers and read holds (Materialize's storage controller
over a Kafka-like log), Kafka's replication rules, and the :class:`ControllerActor` that owns them
and supervises the share-group and RLMM actors.

Modules: :mod:`.topics`, :mod:`.frontiers`, :mod:`.replication` (pure), :mod:`.state` (the
composite decider), :mod:`.messages`, :mod:`.supervision`, :mod:`.actor`. Reference:
``reference/controller.md``. Import the actor from :mod:`actors.controller.actor` (this package
stays importable without Thespian side effects).
"""
