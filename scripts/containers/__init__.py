"""A zkafka cluster in Docker containers (testcontainers): a 3-node ZooKeeper ensemble and N brokers from
the project's images, with the faults the container tests and ``zkafka soak`` inject. Needs the
``soak`` extra (testcontainers) and the images ``compose/build-images.sh`` builds."""
