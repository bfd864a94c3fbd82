"""Certificates (a primitive: the adapter and the sandbox both use it, neither imports the other): a
self-signed serving certificate (upstream's `--cert-dir` behaviour)
and small CAs that issue client certificates (the sandbox's front proxy, tests).

Uses `cryptography`: writing X.509 by hand is not something to get creative with.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _sans(hosts: list[str]):
    from cryptography import x509

    out = []
    for h in hosts:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            out.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(out)


@dataclass
class CA:
    cert_pem: bytes
    key_pem: bytes

    @classmethod
    def create(cls, cn: str = "promop-ca", days: int = 365) -> "CA":
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import NameOID

        key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        now = _dt.datetime.now(_dt.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - _dt.timedelta(minutes=5))
                .not_valid_after(now + _dt.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                # key identifiers: Python 3.13 verifies strictly (VERIFY_X509_STRICT) and requires them
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return cls(_pem_cert(cert), _pem_key(key))

    def issue(self, cn: str, *, client: bool = False, hosts: list[str] | None = None,
              organizations: list[str] | None = None, days: int = 365) -> tuple[bytes, bytes]:
        """(certificate PEM, key PEM) signed by this CA, for a client or a server."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        ca_key = serialization.load_pem_private_key(self.key_pem, None)
        ca_cert = x509.load_pem_x509_certificate(self.cert_pem)
        key = _key()
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations or ()]
        if cn:   # "" gives a subject without a CN (which a login must refuse)
            attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
        now = _dt.datetime.now(_dt.timezone.utc)
        b = (x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(ca_cert.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=days))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client
                                                   else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
             .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),
                            critical=False))
        if hosts:
            b = b.add_extension(_sans(hosts), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        return _pem_cert(cert), _pem_key(key)


def self_signed(cert_dir: str | os.PathLike, hosts: list[str], name: str = "apiserver") -> tuple[str, str]:
    """Paths of `<name>.crt`/`<name>.key` in `cert_dir`, created (CA-signed, CA alongside) if missing."""
    d = Path(cert_dir)
    crt, key = d / f"{name}.crt", d / f"{name}.key"
    if crt.exists() and key.exists():
        return str(crt), str(key)
    d.mkdir(parents=True, exist_ok=True)
    ca = CA.create(f"promop-adapter-ca@{int(_dt.datetime.now().timestamp())}")
    cert_pem, key_pem = ca.issue(hosts[0] if hosts else "localhost", hosts=hosts or ["localhost", "127.0.0.1"])
    crt.write_bytes(cert_pem + ca.cert_pem)
    key.write_bytes(key_pem)
    os.chmod(key, 0o600)
    return str(crt), str(key)
