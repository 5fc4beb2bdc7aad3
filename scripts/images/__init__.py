"""``zkafka images ...``: the zkafka container images (the implementation is ``zkafka.images``)."""
