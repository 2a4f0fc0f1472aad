"""Transactions v2 (KIP-890) on Apache Kafka 4.4 with the Java reference client
(samples/java/TransactionalProducer.java): a transactional producer commits and aborts transactions, its epoch
bumped by the coordinator at the end of each; a second instance with the same transactional.id initializes and
fences it: its next Produce is refused INVALID_PRODUCER_EPOCH (the application gets InvalidProducerEpochException,
not ProducerFencedException) and the abort that follows PRODUCER_FENCED; a read_committed KIP-848 consumer reads
the topic.

Producer ids and epochs come from the clients' own log (the InitProducerId and EndTxn responses they received).
"""

from __future__ import annotations

from kafkatap.samples.javaclients import LIBRARY, ClientLog, JavaClient, JavaClients, record
from kafkatap.samples.make import Env, Spec

SPEC = Spec(
    name="kafka44_transactions",
    description="Apache Kafka 4.4, Java clients, transactions v2: kt-txn-1 (transactional.id kt-txn) runs 6 "
                "transactions on topic `ledger` (2 partitions), every third aborted, each ending with a new producer "
                "epoch; kt-txn-2 takes the transactional id and kt-txn-1's next transaction is refused "
                "(INVALID_PRODUCER_EPOCH, then PRODUCER_FENCED); a "
                "read_committed consumer (kt-rc, group kt-rc) reads only the committed records.",
    kafka_port=19441,
)
TOPIC, PARTITIONS, TXN_ID, READER_GROUP = "ledger", 2, "kt-txn", "kt-rc"
WAIT = 30.0  # bound on any one step


def run(env: Env) -> None:
    truth, kafka = env.truth, env.kafka
    truth.topic(TOPIC, PARTITIONS)
    truth.note("Apache Kafka 4.4 (one KRaft node) with transaction.version=2: the coordinator bumps the producer epoch "
               "at the end of every transaction (EndTxn v5 answers the new epoch), so each transaction of one "
               "producer is written under its own epoch.")
    clients = JavaClients(env.workdir / "clients")
    start, programs = clients.start, clients.programs

    def producer(client_id: str, *create: str) -> JavaClient:
        truth.client(client_id, LIBRARY, "producer", **{"transactional.id": TXN_ID, "linger.ms": 5})
        program = start("TransactionalProducer", client_id,
                        [kafka.bootstrap, client_id, TXN_ID, TOPIC, str(PARTITIONS), *create])
        program.wait_for("initialized", WAIT)
        return program

    try:
        truth.client("kt-txn-1-admin", LIBRARY, "admin")  # creates the topic
        first = producer("kt-txn-1", "1")
        first.send("run 6")
        first.wait_for("ran", WAIT)
        second = producer("kt-txn-2")
        truth.event("kt-txn-2", "took_transactional_id", transactional_id=TXN_ID)
        first.send("run 1")
        first.wait_for("ran", WAIT, count=2)
        second.send("run 3")
        second.wait_for("ran", WAIT)
        committed = sum(len(offsets) for p in (first, second) for e in p.events
                        if e["what"] == "transaction" and e["outcome"] == "committed"
                        for offsets in e["offsets"].values())
        truth.client("kt-rc", LIBRARY, "consumer", **{"group.id": READER_GROUP, "group.protocol": "consumer",
                                                      "isolation.level": "read_committed"})
        reader = start("GroupMember", "kt-rc", [f"bootstrap={kafka.bootstrap}", "client.id=kt-rc",
                                                f"group.id={READER_GROUP}", f"topic={TOPIC}",
                                                "isolation.level=read_committed", "max.seconds=60"])
        reader.wait_for("records", WAIT, where=lambda e: sum(
            len(r["offsets"]) for r in reader.events if r["what"] == "records") >= committed)
        for program in (reader, first, second):
            program.stop()
    finally:
        for program in programs:
            program.kill()
    _record(env, programs)


def _record(env: Env, programs: list[JavaClient]) -> None:
    """Transactions with the producer id and epoch each was written under: the epoch its producer held when it
    began (InitProducerId's, then each EndTxn's), and the fencing of the first instance."""
    truth = env.truth
    logs = record(truth, env.log, programs, {"kt-rc": READER_GROUP})
    taken = max(e["wall"] for p in programs for e in p.events if e["what"] == "initialized")
    transactions = []
    for program, log in zip(programs, logs):
        if program.main != "TransactionalProducer":
            continue
        held = _epochs(log)
        done = [e for e in program.events if e["what"] == "transaction"]
        if len(held) < len(done):
            raise RuntimeError(f"{program.log}: {len(done)} transactions but {len(held)} producer epochs")
        for e, (pid, epoch) in zip(done, held):
            records = 0
            for tp, offsets in e["offsets"].items():
                topic, part = tp.rsplit(":", 1)
                records += len(offsets)
                for off in offsets:
                    truth.produced(e["client_id"], topic, int(part), off, producer_id=pid, producer_epoch=epoch,
                                   transactional_id=TXN_ID, outcome=e["outcome"])
            transactions.append({"client_id": e["client_id"], "transactional_id": TXN_ID, "producer_id": pid,
                                 "producer_epoch": epoch, "outcome": e["outcome"], "records": records})
        pid, epoch = held[0]
        cid = done[0]["client_id"]
        truth.producer(cid, pid, epoch, TXN_ID)
        refused = next((e for e in program.events if e["what"] == "exception"), None)
        if refused:  # every error it was answered after the second instance took the transactional id, once
            first: dict[str, tuple[float, str]] = {}
            for wall, _, api, name in log.errors:
                if wall >= taken:
                    first.setdefault(name, (wall, api))
            for name, (wall, api) in first.items():
                truth.fenced("producer", name, cid, transactional_id=TXN_ID, producer_id=pid,
                             detail=f"a second instance took the transactional id; {api} refused; the application "
                                    f"got {refused['exception']}", t=round(wall - truth.t0_wall, 3))
    truth.doc["transactions"] = transactions
    seen = sum(len(e["offsets"]) for p in programs for e in p.events if e["what"] == "records")
    truth.doc["isolation"] = {"records_received": {"read_committed": seen}}


def _epochs(log: ClientLog) -> list[tuple[int, int]]:
    """(producer id, epoch) each transaction of the program began with: the one InitProducerId handed, then the one
    each EndTxn handed (the last is what it would have begun the next with)."""
    return [(pid, epoch) for _, _, _, pid, epoch in log.producer_epochs]
