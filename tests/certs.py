"""Test certificates made with the ``openssl`` CLI at test time (no new dependency): a CA, a server
certificate for 127.0.0.1/localhost (subjectAltName), client certificates, one from another CA, an
expired one, and Kafka KIP-651 PEM keystores (private key + certificate chain in one file)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass(frozen=True)
class Pki:
    dir: Path
    ca: Path                 # the trusted CA (ssl.truststore.location, clients' ssl.ca.location)
    server_keystore: Path    # key + cert for CN=broker, SAN IP:127.0.0.1, DNS:localhost
    client_cert: Path        # CN=alice,OU=eng,O=zkafka, signed by the trusted CA
    client_key: Path
    client_keystore: Path
    untrusted_cert: Path     # CN=mallory, signed by another CA
    untrusted_key: Path
    expired_cert: Path       # CN=old, trusted CA, validity ended in 2020
    expired_key: Path
    encrypted_keystore: Path  # the server keystore with its key encrypted under ENCRYPTED_PASSWORD


ENCRYPTED_PASSWORD = "keystore-secret"


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", *EC, "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "30",
             "-subj", f"/CN={name}", cwd=d)


def _signed(d: Path, name: str, subject: str, ca: str, extensions: str = "",
            dates: tuple[str, str] | None = None) -> None:
    _openssl("req", "-new", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
    if dates is None:
        ext = ["-extfile", f"{name}.ext"] if extensions else []
        if extensions:
            (d / f"{name}.ext").write_text(extensions + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
                 "-days", "30", "-out", f"{name}.pem", *ext, cwd=d)
    else:  # openssl x509 cannot back-date; openssl ca can (-startdate/-enddate)
        (d / "index.txt").write_text("")
        (d / "ca.cnf").write_text(
            "[ca]\ndefault_ca=test\n[test]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial.txt\n"
            "default_md=sha256\npolicy=any\n[any]\ncommonName=supplied\n")
        (d / "serial.txt").write_text("1000\n")
        _openssl("ca", "-config", "ca.cnf", "-batch", "-notext", "-in", f"{name}.csr", "-cert", f"{ca}.pem",
                 "-keyfile", f"{ca}.key", "-startdate", dates[0], "-enddate", dates[1], "-out", f"{name}.pem", cwd=d)


def make_pki(d: Path) -> Pki:
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "other-ca")
    _signed(d, "server", "/CN=broker", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost")
    _signed(d, "alice", "/O=zkafka/OU=eng/CN=alice", "ca")
    _signed(d, "mallory", "/CN=mallory", "other-ca")
    _signed(d, "old", "/CN=old", "ca", dates=("20200101000000Z", "20200102000000Z"))
    for name in ("server", "alice"):
        (d / f"{name}.keystore.pem").write_text((d / f"{name}.key").read_text() + (d / f"{name}.pem").read_text())
    _openssl("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{ENCRYPTED_PASSWORD}", "-out",
             "server.enc.key", cwd=d)
    (d / "server.enc.keystore.pem").write_text((d / "server.enc.key").read_text() + (d / "server.pem").read_text())
    return Pki(d, d / "ca.pem", d / "server.keystore.pem", d / "alice.pem", d / "alice.key", d / "alice.keystore.pem",
               d / "mallory.pem", d / "mallory.key", d / "old.pem", d / "old.key", d / "server.enc.keystore.pem")
