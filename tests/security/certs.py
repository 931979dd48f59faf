"""A throwaway certificate authority for tests: a CA, a server certificate for 127.0.0.1 /
localhost, and client certificates, as PEM files in a directory the test owns. Made with
the ``cryptography`` package, or the ``openssl`` command when it is missing."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    directory: Path
    ca: Path
    """The CA certificate (a truststore)."""
    server: Path
    """The server's certificate chain and key in one PEM file (a PEM keystore)."""
    server_cert: Path
    server_key: Path

    def client(self, name: str) -> tuple[Path, Path]:
        """(certificate, key) for a client whose subject is ``CN=<name>,O=kafkalite-tests``."""
        cert, key = self.directory / f"{name}.crt", self.directory / f"{name}.key"
        if not cert.exists():
            _issue(self.directory, name, cert, key, server=False)
        return cert, key


def _has_cryptography() -> bool:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return False
    return True


def make_pki(directory: Path, key_password: str | None = None, *,
             use_openssl: bool = False) -> Pki:
    """``use_openssl`` forces the ``openssl`` command even when ``cryptography`` is there."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = directory / "ca.crt", directory / "ca.key"
    openssl = use_openssl or not _has_cryptography()
    if openssl:
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-days", "2", "-subj", "/CN=kafkalite-test-ca",
                 "-keyout", str(ca_key), "-out", str(ca_cert))
        (directory / ".openssl").touch()
    else:
        _make_ca_cryptography(ca_cert, ca_key)
    server_cert, server_key = directory / "server.crt", directory / "server.key"
    _issue(directory, "localhost", server_cert, server_key, server=True,
           key_password=key_password)
    keystore = directory / "server.pem"
    keystore.write_bytes(server_cert.read_bytes() + server_key.read_bytes())
    return Pki(directory, ca_cert, keystore, server_cert, server_key)


def _openssl(*args: str) -> None:
    assert shutil.which("openssl"), "neither cryptography nor openssl is available"
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _make_ca_cryptography(cert_path: Path, key_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafkalite-test-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))


def _issue(directory: Path, name: str, cert_path: Path, key_path: Path, *, server: bool,
           key_password: str | None = None) -> None:
    if (directory / ".openssl").exists():
        _issue_openssl(directory, name, cert_path, key_path, server=server,
                       key_password=key_password)
        return
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
    ca_cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkalite-tests"),
                         x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=2)))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    encryption = (serialization.BestAvailableEncryption(key_password.encode())
                  if key_password else serialization.NoEncryption())
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8, encryption))


def _issue_openssl(directory: Path, name: str, cert_path: Path, key_path: Path, *,
                   server: bool, key_password: str | None) -> None:
    request, extensions = directory / f"{name}.csr", directory / f"{name}.ext"
    plain_key = directory / f"{name}.plain.key"
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-subj", f"/O=kafkalite-tests/CN={name}", "-keyout", str(plain_key),
             "-out", str(request))
    extensions.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                          "extendedKeyUsage=serverAuth\n" if server
                          else "extendedKeyUsage=clientAuth\n")
    _openssl("x509", "-req", "-in", str(request), "-CA", str(directory / "ca.crt"),
             "-CAkey", str(directory / "ca.key"), "-CAcreateserial", "-days", "2",
             "-extfile", str(extensions), "-out", str(cert_path))
    if key_password:
        _openssl("pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", str(plain_key),
                 "-passout", f"pass:{key_password}", "-out", str(key_path))
    else:
        _openssl("pkcs8", "-topk8", "-nocrypt", "-in", str(plain_key), "-out", str(key_path))
    for leftover in (request, extensions, plain_key):
        leftover.unlink()
