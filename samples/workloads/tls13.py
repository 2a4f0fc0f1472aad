"""TLS 1.3 between kafka-python clients and Tansu (through the TLS terminator), with the clients' key log."""

from kafkatap.samples.make import Env, Spec, TlsSpec
from kafkatap.samples.workloads.tls_clients import run_through_tls

SPEC = Spec(
    name="tls13",
    description="Tansu behind a TLS terminator: kafka-python clients over TLS 1.3 create a topic, produce 30 records, "
                "consume them in a classic group and commit; the clients' NSS key log is tls13.keys.",
    tansu_port=19040,
    tls=TlsSpec(port=19041),
)


def run(env: Env) -> None:
    run_through_tls(env, "kt-tls13-group")
