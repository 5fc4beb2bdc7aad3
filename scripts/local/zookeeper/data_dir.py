"""ZooKeeper by data directory, from any process: ``start`` records the layout in ``data_dir/zkafka-zookeeper.json``
so that ``load``, ``stop`` and ``status`` (and ``zkafka zookeeper``) find the nodes again."""
from __future__ import annotations

import json
from pathlib import Path

from scripts.local.zookeeper.config import DEFAULT_DATA_DIR, DEFAULT_PORT, DEFAULT_TICK_TIME, STATE_FILE, ZooKeeperError
from scripts.local.zookeeper.ensemble import ZooKeeperEnsemble
from scripts.local.zookeeper.server import ZooKeeperServer

def _state_path(data_dir: Path) -> Path:
    return Path(data_dir).resolve() / STATE_FILE


def _build(data_dir: Path, port: int, ensemble: int, tick_time: int) -> ZooKeeperServer | ZooKeeperEnsemble:
    if ensemble == 1:
        return ZooKeeperServer(data_dir, port, tick_time=tick_time)
    return ZooKeeperEnsemble(data_dir, port, ensemble, tick_time=tick_time)


def load(data_dir: Path | str) -> ZooKeeperServer | ZooKeeperEnsemble:
    """The server or ensemble that ``start`` set up in ``data_dir`` (running or not)."""
    path = _state_path(Path(data_dir))
    try:
        state = json.loads(path.read_text())
        return _build(Path(data_dir), int(state["port"]), int(state["ensemble"]), int(state["tick_time"]))
    except FileNotFoundError:
        raise ZooKeeperError(f"no ZooKeeper was started in {Path(data_dir).resolve()} ({path.name} not found)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ZooKeeperError(f"{path} is unreadable: {exc!r}") from None


def start(data_dir: Path | str = DEFAULT_DATA_DIR, port: int = DEFAULT_PORT, *, ensemble: int = 1,
          tick_time: int = DEFAULT_TICK_TIME, timeout: float = 60.0) -> ZooKeeperServer | ZooKeeperEnsemble:
    """Start ZooKeeper in the background in ``data_dir``; return once it serves. The processes outlive the caller."""
    data_dir = Path(data_dir)
    try:
        previous = load(data_dir)
    except ZooKeeperError:
        previous = None
    if previous is not None and previous.is_running():
        raise ZooKeeperError(f"ZooKeeper already running in {data_dir.resolve()} ({previous.connect_string}); "
                             "stop it first: zkafka zookeeper stop --data-dir " + str(data_dir))
    zk = _build(data_dir, port, ensemble, tick_time)
    zk.data_dir.mkdir(parents=True, exist_ok=True)
    _state_path(data_dir).write_text(json.dumps({"port": port, "ensemble": ensemble, "tick_time": tick_time}) + "\n")
    return zk.start(timeout)


def stop(data_dir: Path | str = DEFAULT_DATA_DIR, grace: float = 10.0) -> list[int]:
    """Stop what ``start`` started in ``data_dir``; returns the pids that were running (empty: nothing was)."""
    zk = load(data_dir)
    nodes = zk.nodes if isinstance(zk, ZooKeeperEnsemble) else [zk]
    pids = [n.pid for n in nodes if n.is_running()]
    zk.stop(grace)
    return [p for p in pids if p is not None]


def status(data_dir: Path | str = DEFAULT_DATA_DIR) -> dict:
    """``{"data_dir", "connect_string", "ensemble", "state": serving|degraded|stopped, "nodes": [...]}``.

    serving: every node runs and serves; degraded: some node runs; stopped: none runs.
    """
    zk = load(data_dir)
    nodes = zk.status() if isinstance(zk, ZooKeeperEnsemble) else [zk.status()]
    if all(n["serving"] for n in nodes):
        state = "serving"
    elif any(n["running"] for n in nodes):
        state = "degraded"
    else:
        state = "stopped"
    return {"data_dir": str(zk.data_dir), "connect_string": zk.connect_string, "ensemble": len(nodes),
            "tick_time": zk.tick_time, "state": state, "nodes": nodes}
