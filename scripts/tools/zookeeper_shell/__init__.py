"""``zookeeper-shell host:port[/chroot] [-zk-tls-config-file FILE] [cmd args...]``: Kafka 2.8's zookeeper-shell
(ZooKeeper 3.5.9's ``ZooKeeperMain`` through ``ZooKeeperMainWithTlsSupportForKafka``).

With a command it runs that one and exits with its status; without, it reads commands from stdin, one per
line (a prompt ``[zk: host:port(CONNECTED) N]`` only when stdin is a terminal). Commands: ``ls [-s] [-w] [-R]
path``, ``get [-s] [-w] path``, ``stat [-w] path``, ``create [-s] [-e] path [data] [acl]``, ``set [-s] [-v
version] path data``, ``delete [-v version] path``, ``deleteall path``, ``getAcl [-s] path``, ``quit``.
Output is ZooKeeper's (``scripts.tools.zookeeper_shell.syntax``), e.g.::

    $ zookeeper-shell localhost:2181 ls /brokers/ids
    Connecting to localhost:2181

    WATCHER::

    WatchedEvent state:SyncConnected type:None path:null
    [1, 2, 3]

Credentials for a ZooKeeper with ``zookeeper.set.acl=true``: ``KAFKA_OPTS=-Djava.security.auth.login.config=
jaas.conf`` (a ``Client`` section with DigestLoginModule) and/or ``-zk-tls-config-file`` (``scripts.tools.
common.zk_security``).
"""
from __future__ import annotations

from scripts.tools.zookeeper_shell.command import main

__all__ = ["main"]
