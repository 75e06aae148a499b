"""Test certificates made with ``cryptography``: a CA, a server certificate for 127.0.0.1 and
localhost, and client certificates, written as PEM files (key + chain in one file, as Kafka's
``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` expects)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    """Paths of the generated PEM files.

    ``ca``: the CA certificate; ``server``: server key + certificate chain (one file);
    ``server_key``/``server_cert``: the same, separately; ``client``/``client_key``/``client_cert``:
    a client certificate with subject ``CN=alice,O=x`` signed by the CA; ``rogue_client*``: a
    client certificate signed by another CA (must be refused)."""

    dir: Path
    ca: Path
    server: Path
    server_key: Path
    server_cert: Path
    client: Path
    client_key: Path
    client_cert: Path
    rogue_client_key: Path
    rogue_client_cert: Path


def _name(**attrs: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in attrs.items()])


def _cert(subject: x509.Name, key, issuer: x509.Name, issuer_key, ca: bool, san: list | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        b = b.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _pem_key(key, password: bytes | None = None) -> bytes:
    enc = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(out: Path, key_password: bytes | None = None) -> Pki:
    """Generate the PKI into ``out`` (created). ``key_password`` encrypts the server key (PKCS#8),
    for ``ssl.key.password``. Returns the file paths."""
    out.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(CN="Shoal Test CA")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = _cert(_name(CN="localhost"), srv_key, ca_name, ca_key, ca=False, san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli = _cert(_name(O="x", CN="alice"), cli_key, ca_name, ca_key, ca=False)
    rogue_ca_key = ec.generate_private_key(ec.SECP256R1())
    rogue_ca_name = _name(CN="Rogue CA")
    rogue_key = ec.generate_private_key(ec.SECP256R1())
    rogue = _cert(_name(CN="mallory"), rogue_key, rogue_ca_name, rogue_ca_key, ca=False)

    def write(name: str, data: bytes) -> Path:
        p = out / name
        p.write_bytes(data)
        return p

    return Pki(
        dir=out,
        ca=write("ca.pem", _pem_cert(ca)),
        server=write("server.pem", _pem_key(srv_key, key_password) + _pem_cert(srv) + _pem_cert(ca)),
        server_key=write("server.key", _pem_key(srv_key, key_password)),
        server_cert=write("server.crt", _pem_cert(srv) + _pem_cert(ca)),
        client=write("client.pem", _pem_key(cli_key) + _pem_cert(cli)),
        client_key=write("client.key", _pem_key(cli_key)),
        client_cert=write("client.crt", _pem_cert(cli)),
        rogue_client_key=write("rogue.key", _pem_key(rogue_key)),
        rogue_client_cert=write("rogue.crt", _pem_cert(rogue)),
    )
