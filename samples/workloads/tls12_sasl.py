"""TLS 1.2 with a SASL/PLAIN login inside it, between kafka-python clients and Tansu, with the clients' key log."""

from kafkatap.samples.make import Env, Spec, TlsSpec
from kafkatap.samples.workloads.tls_clients import run_through_tls

SPEC = Spec(
    name="tls12_sasl",
    description="Tansu behind a TLS terminator that answers SASL/PLAIN: kafka-python clients over TLS 1.2 "
                "(ECDHE_RSA, AES-GCM) log in, create a topic, produce 30 records, consume them in a classic group and "
                "commit; the clients' NSS key log is tls12_sasl.keys.",
    tansu_port=19042,
    tls=TlsSpec(port=19043, maximum_version="TLSv1_2", sasl_users=(("alice", "pa55-inside-tls"),)),
)


def run(env: Env) -> None:
    run_through_tls(env, "kt-tls12-group")
