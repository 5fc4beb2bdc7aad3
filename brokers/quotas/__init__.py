"""Client quotas (Kafka 2.8's ``QuotaManagers``, KIP-13/55/124/219/599): which quota applies to a connection,
the rates clients are measured by, and the throttle time that keeps each within its quota. Pure: the listener
mutes connections, the handlers ask for throttle times, ``brokers.app`` feeds the quotas from ZooKeeper."""
