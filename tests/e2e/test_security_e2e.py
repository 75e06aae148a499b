"""End-to-end: a real ``app.py run`` daemon with PLAINTEXT, SSL (mutual TLS), SASL_PLAINTEXT (PLAIN)
and SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) listeners, configured with Kafka's keys, and
confluent-kafka Producers and ShareConsumers over each; wrong passwords and missing client
certificates are refused the way librdkafka reports them. Certificates are generated here.

SCRAM credentials are created as users do, with ``AdminClient.alter_user_scram_credentials``
(KIP-554) over the PLAINTEXT listener.
"""

from __future__ import annotations

import time

import pytest

from tests.certs import make_pki
from tests.e2e.conftest import _Factory, free_port
from tests.e2e.helpers import create_topic, produce, set_group_config, upsert_scram_credentials

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """One daemon with four listeners; yields ``(daemon, ports by listener, pki)``."""
    base = tmp_path_factory.mktemp("security")
    pki = make_pki(base / "pki")
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    overrides = {
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "group.share.heartbeat.interval.ms": "1000",
        "group.share.min.heartbeat.interval.ms": "1000",
    }
    f = _Factory(base)
    try:  # a failure after the daemon started must still stop it
        d = f(port=ports["PLAINTEXT"], **overrides)
        upsert_scram_credentials(d.bootstrap, USERS)
        yield d, ports, pki
    finally:
        f.close()


def _conf(kind: str, ports: dict[str, int], pki, user: str = "alice", password: str | None = None, mechanism: str = "PLAIN") -> dict:
    if kind == "PLAINTEXT":
        return {"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"}
    if kind == "SSL":
        return {
            "bootstrap.servers": f"127.0.0.1:{ports['SSL']}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),
            "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(pki.client_key),
        }
    conf = {
        "bootstrap.servers": f"127.0.0.1:{ports[kind]}",
        "security.protocol": kind,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": USERS.get(user, "") if password is None else password,
    }
    if kind == "SASL_SSL":
        conf["ssl.ca.location"] = str(pki.ca)
    return conf


def _share_consume(conf: dict, topic: str, group: str, want: int, timeout_s: float = 60) -> set[str]:
    from confluent_kafka import ShareConsumer

    c = ShareConsumer({**conf, "group.id": group})
    c.subscribe([topic])
    got: set[str] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(got) < want and time.monotonic() < deadline:
            for m in c.poll(0.5):
                if m.error() is None:
                    got.add(m.value().decode())
    finally:
        c.close()
    return got


CASES = [
    ("PLAINTEXT", "PLAIN"),
    ("SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]


@pytest.mark.parametrize(("kind", "mechanism"), CASES, ids=[f"{k}-{m}" for k, m in CASES])
def test_produce_and_share_consume_over_each_listener(secured, kind, mechanism):
    d, ports, pki = secured
    topic = f"t-{kind}-{mechanism}".lower()
    create_topic(d.bootstrap, topic, 3)
    set_group_config(d.bootstrap, f"g-{topic}", "share.auto.offset.reset", "earliest")
    conf = _conf(kind, ports, pki, mechanism=mechanism)
    values = [f"{kind}-{mechanism}-{i}" for i in range(60)]
    acked = produce(conf["bootstrap.servers"], topic, values, **{k: v for k, v in conf.items() if k != "bootstrap.servers"})
    assert set(acked) == set(values), d.log_tail()
    assert _share_consume(conf, topic, f"g-{topic}", len(values)) == set(values), d.log_tail()


def _first_error(conf: dict, timeout_s: float = 30):
    """The first error a Producer reports through ``error_cb`` (or None)."""
    from confluent_kafka import Producer

    errors = []
    p = Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + timeout_s
    while not errors and time.monotonic() < deadline:
        p.poll(0.2)
    return errors[0] if errors else None


@pytest.mark.parametrize(
    ("kind", "mechanism", "user", "password"),
    [
        ("SASL_PLAINTEXT", "PLAIN", "alice", "wrong"),
        ("SASL_SSL", "PLAIN", "mallory", "x"),
        ("SASL_SSL", "SCRAM-SHA-512", "alice", "wrong"),
        ("SASL_SSL", "SCRAM-SHA-256", "nobody", "x"),
    ],
)
def test_bad_credentials_are_an_authentication_error(secured, kind, mechanism, user, password):
    from confluent_kafka import KafkaError

    _d, ports, pki = secured
    err = _first_error(_conf(kind, ports, pki, user=user, password=password, mechanism=mechanism))
    assert err is not None and err.code() == KafkaError._AUTHENTICATION, err
    assert "Authentication failed" in err.str()  # the broker's message (SASL_AUTHENTICATION_FAILED) reaches the client


def test_mechanism_not_enabled_on_the_listener_is_refused(secured):
    from confluent_kafka import KafkaError

    _d, ports, pki = secured
    err = _first_error(_conf("SASL_PLAINTEXT", ports, pki, mechanism="SCRAM-SHA-256"))
    assert err is not None and err.code() in (KafkaError._AUTHENTICATION, KafkaError._UNSUPPORTED_FEATURE), err


def test_ssl_without_a_client_certificate_is_refused(secured):
    from confluent_kafka import KafkaError

    _d, ports, pki = secured
    conf = {k: v for k, v in _conf("SSL", ports, pki).items() if k not in ("ssl.certificate.location", "ssl.key.location")}
    err = _first_error(conf)
    assert err is not None and err.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN), err


def test_librdkafka_reauthenticates_before_the_session_expires(daemon_factory, tmp_path):
    """KIP-368: with ``connections.max.reauth.ms`` the broker tells the client its session lifetime
    (SaslAuthenticate v1+); librdkafka re-authenticates on the same connection before it ends, and
    a producer running for several lifetimes keeps every record acknowledged."""
    from confluent_kafka import Producer

    port, sasl_port = free_port(), free_port()
    d = daemon_factory(
        port=port,
        listeners=f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        **{
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.sasl_plaintext.connections.max.reauth.ms": "1500",
            "shoal.log.level": "INFO",
        },
    )
    upsert_scram_credentials(d.bootstrap, {"bob": USERS["bob"]}, ("SCRAM-SHA-256",))
    create_topic(d.bootstrap, "reauth", 1)
    acked, errors = [], []
    p = Producer({
        "bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "bob", "sasl.password": USERS["bob"], "linger.ms": 5, "error_cb": errors.append,
    })
    deadline = time.monotonic() + 6
    i = 0
    while time.monotonic() < deadline:
        p.produce("reauth", value=b"r%d" % i, partition=0, on_delivery=lambda err, msg: acked.append(err is None))
        i += 1
        p.poll(0.05)
    assert p.flush(30) == 0
    assert acked and all(acked) and len(acked) == i, errors
    log = d.log_tail(200_000)
    assert "SASL re-authentication of User:bob with SCRAM-SHA-256 complete" in log, log[-3000:]
