"""Shoal's Kafka protocol edge.

``server`` (listener, framing loop) → ``protocol`` (kio frames) → ``dispatch`` (API table) →
``admin`` / ``records`` / ``share`` (one module per API family) → ``backend`` (what handlers need)
implemented by ``daemon.ShoalBackend`` over ``controller_client`` and ``share_client`` (one actor
message per request, through ``gateway``) and ``logs`` (the data plane: segment files, never
through an actor). ``status`` serves ``app.py status``. Security: ``listeners`` (Kafka's
``listeners``/``advertised.listeners``/protocol map, one ``server.KafkaListener`` each), ``tls``
(SSL contexts from ``ssl.*``, the SSL principal) and ``sasl`` (the per-connection SASL state
machine, PLAIN and SCRAM).
"""
