"""``kafka-mirror-maker``: MirrorMaker 2 (KIP-382) for zkafka: topics, configs and consumer offsets mirrored
between clusters."""
