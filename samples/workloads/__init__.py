"""One module per sample: each declares `SPEC` (samples.make.Spec) and `run(env)` (the scripted clients)."""

NAMES = (
    "produce_consume",
    "idempotent",
    "transactions",
    "classic_group",
    "share_group",
    "share_locks",
    "consumer_group_848",
    "kafka44_consumer_group",
    "kafka44_transactions",
    "kafka44_share_group",
    "kafka44_cluster_restart",
    "kafka44_streams_group",
    "rebalances_classic",
    "rebalances_848",
    "day_in_the_life",
    "synthetic_read_committed",
    "synthetic_classic_rebalance",
    "tls13",
    "tls12_sasl",
)
