"""``ZooKeeperEnsemble``: N ZooKeeper servers on 127.0.0.1 forming one quorum."""
from __future__ import annotations

import signal
import time
from pathlib import Path

from scripts.local.zookeeper.classpath import find_java, resolve_classpath
from scripts.local.zookeeper.config import DEFAULT_PORT, DEFAULT_TICK_TIME, ZooKeeperError, ensemble_ports
from scripts.local.zookeeper.network import try_srvr
from scripts.local.zookeeper.server import Peers, ZooKeeperServer, log_tail

class ZooKeeperEnsemble:
    """``size`` ZooKeeper servers on 127.0.0.1 forming one quorum; node N lives in ``data_dir/node-N``.

    Ready when every node's ``srvr`` says leader or follower (exactly one leader).
    """

    def __init__(self, data_dir: Path | str, base_port: int = DEFAULT_PORT, size: int = 3, *,
                 tick_time: int = DEFAULT_TICK_TIME, classpath: str | None = None, java: str | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.base_port = base_port
        self.size = size
        self.tick_time = tick_time
        ports = ensemble_ports(base_port, size)
        servers = {i + 1: (quorum, election) for i, (_, quorum, election) in enumerate(ports)}
        self.nodes = [ZooKeeperServer(self.data_dir / f"node-{i + 1}", client, tick_time=tick_time,
                                      classpath=classpath, java=java, peers=Peers(i + 1, servers))
                      for i, (client, _, _) in enumerate(ports)]

    @property
    def connect_string(self) -> str:
        return ",".join(n.connect_string for n in self.nodes)

    def __repr__(self) -> str:
        return f"ZooKeeperEnsemble({self.connect_string}, {self.data_dir})"

    def start(self, timeout: float = 60.0) -> ZooKeeperEnsemble:
        classpath, java = None, None
        try:
            for node in self.nodes:
                if classpath is None:  # resolve once, hand the same to every node
                    classpath, java = node._classpath or resolve_classpath(), node._java or find_java()
                node._classpath, node._java = classpath, java
                node.spawn()
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0, nodes: list[ZooKeeperServer] | None = None) -> dict[int, str]:
        """Wait until every node in ``nodes`` (default all) is leader or follower, with exactly one leader.

        Returns {myid: mode}. A node that exits, or the deadline, raises with the log tails.
        """
        nodes = self.nodes if nodes is None else nodes
        deadline = time.monotonic() + timeout
        while True:
            dead = [n for n in nodes if not n.is_running()]
            if dead:
                raise ZooKeeperError(f"{dead[0]!r} exited during start-up; last lines of {dead[0].log_path}:\n"
                                     f"{log_tail(dead[0].log_path)}")
            modes = {n.myid: (try_srvr(n.port) or {}).get("mode") for n in nodes}
            values = list(modes.values())
            if all(m in ("leader", "follower") for m in values) and values.count("leader") == 1:
                return modes
            if time.monotonic() >= deadline:
                tails = "\n".join(f"--- {n.log_path}\n{log_tail(n.log_path, 15)}" for n in nodes)
                raise ZooKeeperError(f"{self!r}: no quorum after {timeout:.0f} s (modes {modes}); logs:\n{tails}")
            time.sleep(0.05)

    def leader(self) -> ZooKeeperServer | None:
        for node in self.nodes:
            if node.is_running() and (try_srvr(node.port) or {}).get("mode") == "leader":
                return node
        return None

    def is_running(self) -> bool:
        return any(n.is_running() for n in self.nodes)

    def stop(self, grace: float = 10.0) -> bool:
        for node in self.nodes:  # signal all first so they shut down in parallel
            node.signal(signal.SIGTERM)
        stopped = [n.stop(grace) for n in self.nodes]  # a node's own error is raised after trying them all
        return any(stopped)

    def status(self) -> list[dict]:
        return [n.status() for n in self.nodes]

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

