"""Configuration as Kafka does it: a ``server.properties`` file plus ``--override key=value``.

Keys are Kafka's (``listeners``, ``log.dirs``, ``num.partitions``, ``group.share.*``,
``remote.log.metadata.topic.num.partitions`` …) plus Shoal's own under ``event.log.*`` and
``shoal.*``. Values stay strings here; each domain parses and validates its keys with Kafka's
types, defaults and ranges (e.g. ``actors/share/config.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["BROKER_DEFAULTS", "ConfigError", "load_config", "parse_properties"]


class ConfigError(ValueError):
    """A config file or override is malformed, or a value is outside its valid range
    (Kafka's ``ConfigException``; INVALID_CONFIG on the wire)."""


#: Broker-level defaults for the embedded setup (Kafka's defaults where Kafka has the key).
BROKER_DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "node.id": "1",
    "log.dirs": "./data/logs",
    "shoal.data.dir": "./data",
    "event.log.url": "",  # empty: sqlite:///<shoal.data.dir>/events.db
    "event.log.sqlite.synchronous": "FULL",
    # SQLite WAL checkpoints run by the daemon's background tick every this many ms, never by an
    # append (one that checkpoints waits for the database file's sync: 130 ms seen); 0: SQLite's
    # automatic checkpoint in the committing connection
    "event.log.sqlite.checkpoint.interval.ms": "1000",
    "event.log.journal.max.batch": "256",
    "event.log.journal.linger.ms": "0",
    "shoal.actor.system.base": "multiprocTCPBase",
    "shoal.actor.system.admin.port": "1900",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "socket.request.max.bytes": "104857600",
    "remote.log.storage.system.enable": "true",
    "remote.log.metadata.topic.num.partitions": "50",
    # -- transport: listeners, TLS, SASL (Kafka's keys and defaults; wire/listeners.py, wire/tls.py, wire/sasl.py).
    # Per listener, any of these may be given as listener.name.<lower-case name>.<key>.
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    "ssl.client.auth": "none",
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.keystore.type": "JKS",  # Kafka's default; Shoal reads PEM only (set ssl.keystore.type=PEM)
    "ssl.truststore.type": "JKS",  # likewise: ssl.truststore.type=PEM
    "sasl.enabled.mechanisms": "GSSAPI",  # Kafka's default; Shoal offers PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    "connections.max.reauth.ms": "0",
    "sasl.server.max.receive.size": "524288",
    "shoal.ssl.handshake.timeout.ms": "10000",  # Shoal's: a TLS handshake slower than this closes its connection
    # scram (KIP-554): the listener's SCRAM credential cache is reloaded when older than this (ms);
    # a change made through this node applies at once, one made through another node within this
    "shoal.wire.scram.refresh.ms": "1000",
    # ACLs (acls): Kafka's keys and defaults; authorizer.class.name empty = no authorizer,
    # org.apache.kafka.metadata.authorizer.StandardAuthorizer (any non-empty value) = ACLs enforced
    "authorizer.class.name": "",
    "super.users": "",
    "allow.everyone.if.no.acl.found": "false",
    "shoal.authorizer.refresh.ms": "1000",  # listener ACL cache re-validation bound (wire/authz.py)
    # orphans (issue 13): the actor system stops by itself when its daemon is gone. Poll interval
    # of the owner watchdog (actors/watchdog) in ms; 0 disables the watchdog (a restart on the
    # same data dir still shuts an orphaned system down).
    "shoal.actor.system.watchdog.ms": "1000",
    # -- limits: connection quotas and the request bound (wire/quotas.py; Kafka's SocketServerConfigs)
    "max.connections": "2147483647",
    "max.connections.per.ip": "2147483647",
    "max.connections.per.ip.overrides": "",
    "queued.max.requests": "500",
    # a connection that does not complete a request frame for this long (ms) while the broker
    # waits for one is closed (Kafka's Selector idle expiry); negative disables it
    "connections.max.idle.ms": "600000",
    # guard (issue 13): the listener process's malloc (wire/memory.py)
    "shoal.malloc.arena.max": "1",
    "shoal.malloc.trim.interval.ms": "5000",
    # -- consumer groups (issue 16): the classic protocol and committed offsets
    #    (Kafka's GroupCoordinatorConfig keys and defaults; actors/consumer/classic.py)
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.initial.rebalance.delay.ms": "3000",
    "group.max.size": "2147483647",
    "offset.metadata.max.bytes": "4096",
    # -- consumer groups, KIP-848 consumer protocol (Kafka's GroupCoordinatorConfig keys and
    #    defaults; actors/consumer/modern.py). The session timeout must lie within the min/max
    #    bounds and the heartbeat interval within its bounds and below the session timeout.
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    # Shoal's default interval is 500 ms (Kafka: 5000, min 5000). The coordinator never pushes:
    # a member learns of a new target assignment only on its next heartbeat, and a joining
    # member takes the released partitions on its own next one, so a rebalance after a join
    # takes one to two intervals (bench/rebalance.py: ~0.5 s here, ~5 s at Kafka's 5000).
    # Setting both keys to 5000 restores Kafka's behaviour.
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.max.size": "2147483647",
    "group.consumer.assignors": "uniform,range",
    # -- the cluster (issue 15): nodes sharing one PostgreSQL event log (KRaft's broker and
    #    controller keys and defaults). "auto": a cluster on PostgreSQL, one node on SQLite.
    "shoal.cluster.enable": "auto",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    # how often a node reads the controller stream for metadata it has not folded yet (ms)
    "shoal.cluster.metadata.poll.ms": "100",
    "unclean.leader.election.enable": "false",
    # automatic preferred leader election by the active controller (actors/controller/balance.py)
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "300",
    "leader.imbalance.per.broker.percentage": "10",
    "min.insync.replicas": "1",
    "replica.lag.time.max.ms": "30000",
    # how often each replica's high watermark is written to <log.dirs>/replication-offset-checkpoint
    # (ms; a cluster node only, wire/hw_checkpoints.py; the daemon's tick bounds it below by
    # shoal.tick.interval.ms)
    "replica.high.watermark.checkpoint.interval.ms": "5000",
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.min.bytes": "1",
    "replica.fetch.max.bytes": "1048576",
    "replica.socket.timeout.ms": "30000",
    "controller.socket.timeout.ms": "30000",
}


def cluster_enabled(cfg: Mapping[str, str]) -> bool:
    """Whether the daemon of ``cfg`` runs as a node of a cluster: ``shoal.cluster.enable``
    ``true``, or ``auto`` (the default) with a PostgreSQL ``event.log.url``. On SQLite the daemon
    is a single node (``true`` with SQLite is refused by the daemon: nodes can only share a
    server log)."""
    mode = str(cfg.get("shoal.cluster.enable", "auto")).strip().lower()
    if mode == "auto":
        return str(cfg.get("event.log.url", "")).startswith("postgresql")
    return mode == "true"


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` or ``key: value`` lines, ``#``/``!``
    comments, backslash line continuations. Returns key → value (strings, stripped).
    Raises :class:`ConfigError` naming the line for a line without a separator."""
    out: dict[str, str] = {}
    pending = ""
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = pending + raw.strip() if pending else raw.strip()
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        if not line or line[0] in "#!":
            continue
        idx = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if idx <= 0:
            raise ConfigError(f"line {lineno}: expected key=value, got {raw!r}")
        out[line[:idx].strip()] = line[idx + 1 :].strip()
    return out


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] = (),
    data_dir: str | None = None,
    defaults: Mapping[str, str] = BROKER_DEFAULTS,
) -> dict[str, str]:
    """Merge ``defaults`` ← the properties file at ``path`` ← ``overrides`` (``"key=value"``
    strings, later ones win) ← ``data_dir`` (sets ``shoal.data.dir`` and ``log.dirs``).

    Fills ``event.log.url`` from the data dir when empty. Returns the merged dict.
    Raises :class:`ConfigError` for a malformed override or file, ``FileNotFoundError`` for a
    missing file."""
    cfg = dict(defaults)
    if path is not None:
        cfg.update(parse_properties(Path(path).read_text()))
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--override expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        cfg[key.strip()] = value.strip()
    if data_dir is not None:
        cfg["shoal.data.dir"] = data_dir
        cfg["log.dirs"] = str(Path(data_dir) / "logs")
    if not cfg.get("event.log.url"):
        cfg["event.log.url"] = f"sqlite:///{Path(cfg['shoal.data.dir']).resolve() / 'events.db'}"
    return cfg
