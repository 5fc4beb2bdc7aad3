"""deploy/: the production deployment files (one host per ZooKeeper node and per broker), checked offline.

- ``deploy/kubernetes``: every manifest validates against Kubernetes' JSON schemas (kubernetes-validate, which ships
  them: no network), strictly (an unknown field fails); then what a schema cannot see: StatefulSets and their
  headless Services, PodDisruptionBudgets, probes, RBAC, volumes, and the pods' start scripts run for real with the
  zkafka image's own entrypoint, whose server.properties the broker's own loader must accept.
- ``deploy/hosts``: the compose files' ``${VAR}`` references against the example env files, and each broker's
  ``KAFKA_*`` environment through the image's entrypoint (its own mapping rule) into ``BrokerConfig``.
- ``deploy/systemd``: the units' entry points are pyproject's, the example ``server.properties`` loads with
  ``BrokerConfig.from_file``, ``zookeeper.properties`` passes ``zookeeper-server-start``'s own checks, the stop
  timeouts cover a controlled shutdown.
"""
from __future__ import annotations

import functools
import http.server
import importlib
import importlib.util
import json
import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
import yaml

from brokers import __main__ as broker_main
from brokers.config import LOG_KEYS, SCHEMA, BrokerConfig, parse_properties
from scripts.local.zookeeper import server_start as zookeeper_server_start
from scripts.local.zookeeper.properties import check as check_zookeeper_properties
from zkafka.testing.properties import property_env

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
HOSTS = DEPLOY / "hosts"
SYSTEMD = DEPLOY / "systemd"
IMAGE_DIR = ROOT / "zkafka" / "images" / "docker"
ENTRYPOINT = IMAGE_DIR / "zkafka-entrypoint.sh"

# The oldest Kubernetes the manifests are for (PodDisruptionBudget policy/v1, StatefulSet minReadySeconds, ...);
# they are validated against it and against the newest schema kubernetes-validate ships.
OLDEST_KUBERNETES = "1.29"
# After the last controlled-shutdown attempt: stopping the fetchers and listeners, flushing and checkpointing logs.
SHUTDOWN_MARGIN_S = 30
# what a server.properties key may be: a schema key, or a broker-level log.* default (schema.LOG_KEYS)
BROKER_KEYS = frozenset(SCHEMA) | frozenset(LOG_KEYS)


# -- helpers -----------------------------------------------------------------------------------------------

def controlled_shutdown_budget_s(config: BrokerConfig) -> float:
    """The longest a SIGTERM'd broker may take (``ControlPlane.request_controlled_shutdown``): every attempt
    waits up to controller.socket.timeout.ms, with controlled.shutdown.retry.backoff.ms between attempts."""
    retries = config["controlled.shutdown.max.retries"]
    waits = retries * config["controller.socket.timeout.ms"] + (retries - 1) * config["controlled.shutdown.retry.backoff.ms"]
    return waits / 1000 + SHUTDOWN_MARGIN_S


def seconds(text: str) -> float:
    """A compose duration (``1m30s``) or a systemd time span (``180s``, ``3min``, ``180``) in seconds."""
    text = str(text).strip()
    if text.isdigit():
        return float(text)
    units = {"us": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(us|ms|sec|min|s|m|h)", text)
    assert parts and "".join(n + u for n, u in parts) == text.replace(" ", ""), f"not a duration: {text!r}"
    return sum(float(n) * units[u] for n, u in parts)


def image_env_defaults() -> dict[str, str]:
    """The KAFKA_* defaults the zkafka image's Dockerfile sets with ENV (they reach the entrypoint too)."""
    text = (IMAGE_DIR / "Dockerfile").read_text()
    return dict(re.findall(r"\b(KAFKA_[A-Z0-9_]+)=(\S+)", "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("#"))))


def stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def run_image_entrypoint(command: list[str], env: dict[str, str], tmp: Path) -> tuple[BrokerConfig, list[str]]:
    """Run ``command`` (the image's entrypoint, or a start script that execs it) with ``env`` as a container
    would, kafka-server-start and mkdir stubbed; the server.properties it wrote, through the broker's loader."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub(bin_dir / "zkafka-entrypoint", f'exec bash "{ENTRYPOINT}" "$@"')
    stub(bin_dir / "kafka-server-start", 'printf "%s\\n" "$@" > "$STUB_ARGS_FILE"')
    stub(bin_dir / "mkdir", "exit 0")  # the entrypoint creates log.dirs: not on this machine
    config_path = tmp / "server.properties"
    args_file = tmp / "kafka-server-start.args"
    full_env = {**env, "PATH": f"{bin_dir}:/usr/bin:/bin", "ZKAFKA_CONFIG": str(config_path),
                "STUB_ARGS_FILE": str(args_file)}
    done = subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, f"{command} failed ({done.returncode}): {done.stderr}"
    args = args_file.read_text().split("\n")[:-1]
    return BrokerConfig.from_file(config_path), args


def written_keys(config: BrokerConfig) -> set[str]:
    return set(parse_properties(Path(config.source).read_text()))


def env_name(key: str) -> str:
    """The KAFKA_* variable the image's entrypoint turns into ``key`` (zkafka.testing's inverse of its rule)."""
    (name,) = property_env({key: ""})
    return name


def hosts_of(connect: str) -> list[str]:
    """``a:2181,b:2181/chroot`` -> ``["a:2181", "b:2181"]``."""
    return connect.split("/", 1)[0].split(",")


# -- Kubernetes manifests ----------------------------------------------------------------------------------

@functools.cache
def kustomization() -> dict:
    return yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())


def manifest_files() -> list[Path]:
    return sorted(p for p in KUBERNETES.glob("*.yaml") if p.name != "kustomization.yaml")


@functools.cache
def resources() -> list[dict]:
    """Every object of the manifests, parsed once (tests only read them)."""
    return [doc for path in manifest_files() for doc in yaml.safe_load_all(path.read_text()) if doc]


def of_kind(kind: str) -> dict[str, dict]:
    return {r["metadata"]["name"]: r for r in resources() if r["kind"] == kind}


def statefulset(name: str) -> dict:
    return of_kind("StatefulSet")[name]


def pod_spec(sts: dict) -> dict:
    return sts["spec"]["template"]["spec"]


def container(sts: dict, name: str | None = None, init: bool = False) -> dict:
    containers = pod_spec(sts)["initContainers" if init else "containers"]
    return containers[0] if name is None else next(c for c in containers if c["name"] == name)


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def container_port(ctr: dict, port) -> int:
    """A probe's or Service's port (a number or a container port's name) as a number of ``ctr``."""
    if isinstance(port, int):
        assert port in [p["containerPort"] for p in ctr.get("ports", [])], f"{ctr['name']} declares no port {port}"
        return port
    named = {p.get("name"): p["containerPort"] for p in ctr.get("ports", [])}
    assert port in named, f"{ctr['name']} has no port named {port!r} ({sorted(named)})"
    return named[port]


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion of env values (``$$`` escapes; an unknown name stays as written)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), value)


def service_link_env(namespace: str) -> dict[str, str]:
    """What the kubelet adds to a container of ``namespace`` unless enableServiceLinks is false."""
    env = {}
    for svc in of_kind("Service").values():
        if svc["metadata"].get("namespace") != namespace or svc["spec"].get("clusterIP") == "None":
            continue
        name = svc["metadata"]["name"].upper().replace("-", "_")
        first = svc["spec"]["ports"][0]["port"]
        env[f"{name}_SERVICE_HOST"] = "10.96.0.10"
        env[f"{name}_SERVICE_PORT"] = str(first)
        env[f"{name}_PORT"] = f"tcp://10.96.0.10:{first}"
        for port in svc["spec"]["ports"]:
            env[f"{name}_PORT_{port['port']}_TCP"] = f"tcp://10.96.0.10:{port['port']}"
    return env


def pod_env(sts: dict, ctr: dict, ordinal: int, node: str = "node-1") -> dict[str, str]:
    """The environment ``ctr`` of pod ``<sts>-<ordinal>`` starts with: the image's defaults, service links if
    enabled, HOSTNAME, then the container's env (fieldRefs resolved, ``$(VAR)`` expanded)."""
    namespace = sts["metadata"]["namespace"]
    pod = f"{sts['metadata']['name']}-{ordinal}"
    env = dict(image_env_defaults())
    if pod_spec(sts).get("enableServiceLinks", True):
        env.update(service_link_env(namespace))
    env["HOSTNAME"] = pod
    fields = {"metadata.namespace": namespace, "metadata.name": pod, "spec.nodeName": node}
    for item in ctr.get("env", []):
        if "value" in item:
            env[item["name"]] = expand(item["value"], env)
        else:
            env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def pod_dns(sts: dict, ordinal: int) -> str:
    meta, spec = sts["metadata"], sts["spec"]
    return f"{meta['name']}-{ordinal}.{spec['serviceName']}.{meta['namespace']}.svc.cluster.local"


def script_path(ctr: dict, sts: dict) -> Path:
    """The deploy/kubernetes/scripts file a container's command runs from its scripts volume."""
    mounts = {m["mountPath"]: m["name"] for m in ctr["volumeMounts"]}
    generated = {g["name"]: g for g in kustomization()["configMapGenerator"]}
    for arg in ctr["command"]:
        for mount, volume_name in mounts.items():
            if arg.startswith(mount + "/"):
                volume = next(v for v in pod_spec(sts)["volumes"] if v["name"] == volume_name)
                files = generated[volume["configMap"]["name"]]["files"]
                name = arg[len(mount) + 1:]
                assert any(Path(f).name == name for f in files), f"{name} is not in ConfigMap {volume_name}"
                return KUBERNETES / next(f for f in files if Path(f).name == name)
    raise AssertionError(f"{ctr['name']}'s command {ctr['command']} runs no script of a mounted ConfigMap")


def mount_of(ctr: dict, path: str) -> dict:
    """The volume mount of ``ctr`` that holds ``path``."""
    found = [m for m in ctr.get("volumeMounts", []) if path == m["mountPath"] or path.startswith(m["mountPath"] + "/")]
    assert found, f"{path} is on no volume of container {ctr['name']}"
    return max(found, key=lambda m: len(m["mountPath"]))


@pytest.fixture()
def no_network(monkeypatch):
    """Any connection attempt fails the test: schema validation must work offline."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access during an offline check: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def kubernetes_validate():
    try:
        from kubernetes_validate import utils
    except ImportError:  # a missing validator is a failure, not a skip: `make test` installs the test extra
        pytest.fail("kubernetes-validate is not installed (pip install -e '.[test]'): it ships the Kubernetes JSON "
                    "schemas these manifests are validated against")
    return utils


@pytest.fixture(scope="module")
def k8s_broker(tmp_path_factory) -> tuple[BrokerConfig, list[str]]:
    """Pod kafka-1 on a node of zone-b: its server.properties, as broker-start.sh and the entrypoint write it."""
    sts = statefulset("kafka")
    ctr = container(sts, "kafka")
    tmp = tmp_path_factory.mktemp("kafka-1")
    env = pod_env(sts, ctr, 1)
    (tmp / "rack").write_text("zone-b\n")
    env["RACK_FILE"] = str(tmp / "rack")  # the init container's output, here rather than on the rack volume
    return run_image_entrypoint(["/bin/sh", str(script_path(ctr, sts))], env, tmp)


def test_kustomization_lists_every_manifest_and_script():
    k = kustomization()
    assert sorted(k["resources"]) == sorted(p.name for p in manifest_files())
    generated = [f for g in k["configMapGenerator"] for f in g["files"]]
    assert sorted(generated) == sorted(f"scripts/{p.name}" for p in (KUBERNETES / "scripts").iterdir())
    images = {i["name"] for i in k["images"]}
    used = {c["image"].rsplit(":", 1)[0] for sts in of_kind("StatefulSet").values()
            for c in pod_spec(sts)["containers"] + pod_spec(sts).get("initContainers", [])}
    assert used <= images, f"images not retaggable through kustomization.yaml: {used - images}"


def test_every_object_is_in_the_kustomization_namespace():
    namespace = kustomization()["namespace"]
    assert namespace in of_kind("Namespace")
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for r in resources():
        if r["kind"] not in cluster_scoped:
            assert r["metadata"].get("namespace") == namespace, f"{r['kind']} {r['metadata']['name']}"
    for binding in of_kind("ClusterRoleBinding").values():
        for subject in binding["subjects"]:
            assert subject.get("namespace") == namespace, f"ClusterRoleBinding {binding['metadata']['name']}"


@pytest.mark.parametrize("version", [OLDEST_KUBERNETES, "latest"])
def test_manifests_validate_against_the_kubernetes_schema(version, no_network):
    utils = kubernetes_validate()
    version = utils.latest_version() if version == "latest" else version
    checked = 0
    for path in manifest_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            try:
                utils.validate(doc, version, strict=True)
            except utils.ValidationError as exc:
                where = ".".join(str(p) for p in exc.path)
                pytest.fail(f"{path.name}: {doc['kind']} {doc['metadata']['name']} against Kubernetes {exc.version}: "
                            f"{where}: {exc.message}")
            checked += 1
    assert checked >= 12


@pytest.mark.parametrize("name", ["zookeeper", "kafka"])
def test_statefulset_has_a_headless_service_that_selects_its_pods(name):
    sts = statefulset(name)
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert selects(sts["spec"]["selector"]["matchLabels"], labels)
    services = of_kind("Service")
    assert sts["spec"]["serviceName"] in services, f"no Service {sts['spec']['serviceName']}"
    svc = services[sts["spec"]["serviceName"]]
    assert svc["metadata"]["namespace"] == sts["metadata"]["namespace"]
    assert svc["spec"].get("clusterIP") == "None", "the StatefulSet's Service must be headless"
    assert selects(svc["spec"]["selector"], labels), "the headless Service does not select the StatefulSet's pods"
    # ZooKeeper peers (and the controller reaching a starting broker) need the names before the pods are Ready
    assert svc["spec"].get("publishNotReadyAddresses") is True
    assert sts["spec"].get("podManagementPolicy") == "Parallel"


def test_every_service_targets_ports_of_the_pods_it_selects():
    for svc in of_kind("Service").values():
        owners = [s for s in of_kind("StatefulSet").values()
                  if selects(svc["spec"]["selector"], s["spec"]["template"]["metadata"]["labels"])]
        assert len(owners) == 1, f"Service {svc['metadata']['name']} selects the pods of {len(owners)} StatefulSets"
        main = pod_spec(owners[0])["containers"][0]
        for port in svc["spec"]["ports"]:
            assert container_port(main, port.get("targetPort", port["port"])) == port["port"]


def test_each_statefulset_has_a_pdb_that_allows_one_pod_down():
    pdbs = of_kind("PodDisruptionBudget")
    for sts in of_kind("StatefulSet").values():
        labels = sts["spec"]["template"]["metadata"]["labels"]
        covering = [p for p in pdbs.values() if selects(p["spec"]["selector"]["matchLabels"], labels)]
        assert len(covering) == 1, f"StatefulSet {sts['metadata']['name']}: {len(covering)} PodDisruptionBudgets"
        assert covering[0]["spec"].get("maxUnavailable") == 1
    for pdb in pdbs.values():
        assert any(selects(pdb["spec"]["selector"]["matchLabels"], s["spec"]["template"]["metadata"]["labels"])
                   for s in of_kind("StatefulSet").values()), f"PDB {pdb['metadata']['name']} selects no pods"


@pytest.mark.parametrize("name", ["zookeeper", "kafka"])
def test_pods_are_spread_over_nodes_and_zones(name):
    sts = statefulset(name)
    spec, labels = pod_spec(sts), sts["spec"]["template"]["metadata"]["labels"]
    anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert any(t["topologyKey"] == "kubernetes.io/hostname" and selects(t["labelSelector"]["matchLabels"], labels)
               for t in anti)
    spread = spec["topologySpreadConstraints"]
    assert any(t["topologyKey"] == "topology.kubernetes.io/zone" and t["maxSkew"] == 1
               and selects(t["labelSelector"]["matchLabels"], labels) for t in spread)
    assert sts["spec"]["replicas"] == 3


@pytest.mark.parametrize("name", ["zookeeper", "kafka"])
def test_volumes_and_claims_are_mounted(name):
    sts = statefulset(name)
    spec = pod_spec(sts)
    declared = {v["name"] for v in spec["volumes"]} | {c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]}
    for ctr in spec["containers"] + spec.get("initContainers", []):
        for mount in ctr.get("volumeMounts", []):
            assert mount["name"] in declared, f"{ctr['name']} mounts undeclared volume {mount['name']}"
    mounted = {m["name"] for m in container(sts)["volumeMounts"]}
    for claim in sts["spec"]["volumeClaimTemplates"]:
        assert claim["metadata"]["name"] in mounted
    generated = {g["name"] for g in kustomization()["configMapGenerator"]}
    for volume in spec["volumes"]:
        if "configMap" in volume:
            assert volume["configMap"]["name"] in generated


def test_broker_pods_are_told_their_identity(k8s_broker):
    config, args = k8s_broker
    sts = statefulset("kafka")
    ctr = container(sts, "kafka")
    assert config.broker_id == 1
    assert config["broker.rack"] == "zone-b"
    (advertised,) = config.advertised_listeners
    (bound,) = config.listeners
    assert (advertised.host, advertised.port) == (pod_dns(sts, 1), container_port(ctr, "kafka"))
    assert bound.port == advertised.port and bound.host == "0.0.0.0"
    assert config.inter_broker_endpoint == advertised
    assert args == [config.source, "--log-level", "INFO"]
    assert mount_of(ctr, config.log_dirs[0].as_posix())["name"] == "data"


def test_broker_pods_config_keys_are_broker_configs(k8s_broker):
    config, _ = k8s_broker
    keys = written_keys(config)
    assert keys <= BROKER_KEYS, f"KAFKA_* variables that are no broker config: {sorted(keys - BROKER_KEYS)}"
    sts = statefulset("kafka")
    variables = {name for name in pod_env(sts, container(sts, "kafka"), 1) if name.startswith("KAFKA_")}
    variables |= {"KAFKA_BROKER_ID", "KAFKA_BROKER_RACK", "KAFKA_ADVERTISED_LISTENERS"}  # broker-start.sh's
    # one config per variable: the entrypoint's rule, read backwards by zkafka.testing (KAFKA_X_Y <-> x.y)
    assert {env_name(key) for key in keys} == variables


def test_broker_pods_take_no_service_links():
    # KAFKA_BOOTSTRAP_SERVICE_HOST and the like would reach the entrypoint as broker configs
    assert pod_spec(statefulset("kafka"))["enableServiceLinks"] is False


def test_broker_pods_reach_every_zookeeper_pod(k8s_broker):
    config, _ = k8s_broker
    zk = statefulset("zookeeper")
    client = container_port(container(zk), "client")
    assert hosts_of(config.zookeeper_connect) == [f"{pod_dns(zk, i)}:{client}" for i in range(zk["spec"]["replicas"])]


def test_broker_probes_are_on_its_http_port(k8s_broker):
    config, _ = k8s_broker
    ctr = container(statefulset("kafka"), "kafka")
    readiness = ctr["readinessProbe"]["httpGet"]
    assert readiness["path"] == "/readyz"
    assert container_port(ctr, readiness["port"]) == config.http_port
    for probe in ("livenessProbe", "startupProbe"):
        assert ctr[probe]["httpGet"]["path"] == "/healthz"  # up while ZooKeeper is away: no restart storms
        assert container_port(ctr, ctr[probe]["httpGet"]["port"]) == config.http_port
    startup = ctr["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 1800  # log recovery before the HTTP port


def test_broker_grace_period_covers_a_controlled_shutdown(k8s_broker):
    config, _ = k8s_broker
    assert config["controlled.shutdown.enable"]
    grace = pod_spec(statefulset("kafka"))["terminationGracePeriodSeconds"]
    assert grace >= controlled_shutdown_budget_s(config)


def test_broker_config_paths_are_writable_volumes():
    sts = statefulset("kafka")
    ctr = container(sts, "kafka")
    assert ctr["securityContext"]["readOnlyRootFilesystem"] is True
    env = pod_env(sts, ctr, 0)
    volumes = {v["name"]: v for v in pod_spec(sts)["volumes"]}
    config_mount = mount_of(ctr, env["ZKAFKA_CONFIG"])
    assert not config_mount.get("readOnly") and "emptyDir" in volumes[config_mount["name"]]
    init = container(sts, "node-rack", init=True)
    init_env = pod_env(sts, init, 0)
    assert init_env["RACK_FILE"] == env["RACK_FILE"]
    assert mount_of(init, init_env["RACK_FILE"])["name"] == mount_of(ctr, env["RACK_FILE"])["name"]


def test_broker_rack_comes_from_the_node_through_rbac():
    sts = statefulset("kafka")
    spec = pod_spec(sts)
    init = container(sts, "node-rack", init=True)
    env = pod_env(sts, init, 0, node="node-7")
    assert env["NODE_NAME"] == "node-7"
    token = mount_of(init, "/var/run/secrets/kubernetes.io/serviceaccount/token")
    assert "projected" in next(v for v in spec["volumes"] if v["name"] == token["name"])
    account = spec["serviceAccountName"]
    assert account in of_kind("ServiceAccount")
    namespace = sts["metadata"]["namespace"]
    granted = False
    for binding in of_kind("ClusterRoleBinding").values():
        if {"kind": "ServiceAccount", "name": account, "namespace": namespace} in binding["subjects"]:
            role = of_kind("ClusterRole")[binding["roleRef"]["name"]]
            granted |= any("" in r["apiGroups"] and "nodes" in r["resources"] and "get" in r["verbs"]
                           for r in role["rules"])
    assert granted, f"ServiceAccount {account} may not get nodes"


class FakeApiServer(http.server.BaseHTTPRequestHandler):
    nodes: dict[str, dict] = {}
    token = "secret-token"

    def do_GET(self):  # noqa: N802 - http.server's name
        name = self.path.rsplit("/", 1)[-1]
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            self.send_response(401)
            body = b"{}"
        elif self.path.startswith("/api/v1/nodes/") and name in self.nodes:
            self.send_response(200)
            body = json.dumps({"kind": "Node", "metadata": {"name": name, "labels": self.nodes[name]}}).encode()
        else:
            self.send_response(404)
            body = b"{}"
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def api_server():
    FakeApiServer.nodes = {"node-a": {"topology.kubernetes.io/zone": "eu-west-1a", "kubernetes.io/hostname": "node-a"},
                           "node-bare": {"kubernetes.io/hostname": "node-bare"}}
    server = http.server.HTTPServer(("127.0.0.1", 0), FakeApiServer)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def node_rack_module():
    sts = statefulset("kafka")
    path = script_path(container(sts, "node-rack", init=True), sts)
    spec = importlib.util.spec_from_file_location("node_rack", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("node, fallback, rack", [("node-a", "", "eu-west-1a"), ("node-a", "spare", "eu-west-1a"),
                                                  ("node-bare", "spare", "spare"), ("node-bare", "", None),
                                                  ("node-gone", "", None)])
def test_node_rack_init_container_reads_the_node_zone(api_server, tmp_path, node, fallback, rack):
    sts = statefulset("kafka")
    init = container(sts, "node-rack", init=True)
    env = pod_env(sts, init, 0, node=node)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(FakeApiServer.token + "\n")
    out = tmp_path / "rack" / "rack"
    env.update({"KUBERNETES_API": api_server, "SERVICE_ACCOUNT_DIR": str(account), "RACK_FILE": str(out),
                "RACK_FALLBACK": fallback})
    code = node_rack_module().main(env)
    if rack is None:
        assert code == 1 and not out.exists()
    else:
        assert code == 0 and out.read_text() == rack + "\n"


def test_node_rack_finds_the_api_server_in_the_pod():
    module = node_rack_module()
    assert module.api_base({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}) == \
        "https://10.96.0.1:443"
    assert module.api_base({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}) == \
        "https://[fd00::1]:443"
    mount = mount_of(container(statefulset("kafka"), "node-rack", init=True), module.SERVICE_ACCOUNT + "/token")
    assert mount["mountPath"] == module.SERVICE_ACCOUNT


def run_zookeeper_start(ordinal_host: str, tmp: Path) -> tuple[int, dict[str, str]]:
    sts = statefulset("zookeeper")
    ctr = container(sts)
    env = pod_env(sts, ctr, 0)
    env["HOSTNAME"] = ordinal_host
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    out = tmp / "env.json"
    stub(bin_dir / "zookeeper-server",
         f'exec "{sys.executable}" -c "import json, os; json.dump(dict(os.environ), open(\'{out}\', \'w\'))"')
    done = subprocess.run(["/bin/sh", str(script_path(ctr, sts))], capture_output=True, text=True, timeout=20,
                          env={**env, "PATH": f"{bin_dir}:/usr/bin:/bin"})
    return done.returncode, json.loads(out.read_text()) if out.exists() else {}


def test_zookeeper_pods_know_their_id_and_the_ensemble(tmp_path):
    sts = statefulset("zookeeper")
    ctr = container(sts)
    servers = {}
    for ordinal in range(sts["spec"]["replicas"]):
        code, env = run_zookeeper_start(f"zookeeper-{ordinal}", tmp_path)
        assert code == 0
        entries = dict(entry.split("=", 1) for entry in env["ZOO_SERVERS"].split())
        servers[ordinal] = entries
        own = entries[f"server.{env['ZOO_MY_ID']}"]
        host, quorum, rest = own.split(":", 2)
        election, client = rest.split(";")
        assert host == pod_dns(sts, ordinal)
        assert [container_port(ctr, "quorum"), container_port(ctr, "election"), container_port(ctr, "client")] == \
            [int(quorum), int(election), int(client)]
    assert len({json.dumps(s, sort_keys=True) for s in servers.values()}) == 1
    assert sorted(servers[0]) == [f"server.{i + 1}" for i in range(sts["spec"]["replicas"])]


def test_zookeeper_start_refuses_a_pod_without_ordinal(tmp_path):
    code, env = run_zookeeper_start("zookeeper", tmp_path)
    assert code != 0 and not env


def test_zookeeper_probes_and_paths():
    sts = statefulset("zookeeper")
    ctr = container(sts)
    client = container_port(ctr, "client")
    assert f"127.0.0.1 {client}" in " ".join(ctr["readinessProbe"]["exec"]["command"])
    assert "srvr" in " ".join(ctr["readinessProbe"]["exec"]["command"])  # in a quorum, not merely up (ruok)
    env = pod_env(sts, ctr, 0)
    for key in ("ZOO_DATA_DIR", "ZOO_DATA_LOG_DIR"):
        assert mount_of(ctr, env[key])["name"] == "data"
    assert not mount_of(ctr, env["ZOO_CONF_DIR"]).get("readOnly")


# -- deploy/hosts: compose files and env files -------------------------------------------------------------

REFERENCE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key), f"{path.name}:{number}: not KEY=VALUE"
        assert key not in values, f"{path.name}:{number}: {key} set twice"
        values[key] = value
    return values


def interpolate(value, env: dict[str, str]):
    """Compose's variable substitution on a parsed file's values."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def replace(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3)
        present = name in env and (env[name] != "" or not (op or "").startswith(":"))
        if op in ("-", ":-"):
            return env[name] if present else arg
        if op in ("?", ":?"):
            assert present, f"compose would stop: {arg}"
            return env[name]
        if op in ("+", ":+"):
            return arg if present else ""
        return env.get(name, "")

    return REFERENCE.sub(replace, value)


def references(text: str) -> tuple[set[str], set[str]]:
    """(variables a compose file needs, variables it can default)."""
    required, optional = set(), set()
    for m in REFERENCE.finditer(text):
        if m.group(0) == "$$":
            continue
        (optional if m.group(2) in ("-", ":-", "+", ":+") else required).add(m.group(1) or m.group(4))
    return required, optional


def compose_service(role: str, env_file: Path) -> dict:
    compose = yaml.safe_load((HOSTS / f"{role}.yml").read_text())
    (service,) = compose["services"].values()
    return interpolate(service, read_env_file(env_file))


def env_files(role: str) -> list[Path]:
    files = sorted(HOSTS.glob(f"{role}-*.env"))
    assert len(files) >= 3, f"expected an example env file per {role} host"
    return files


def ensemble(env_file: Path) -> dict[int, str]:
    """ZK_SERVERS of a zookeeper-N.env: {id: "host:quorum:election;client"}."""
    servers = read_env_file(env_file)["ZK_SERVERS"].split()
    return {int(entry.split("=", 1)[0].removeprefix("server.")): entry.split("=", 1)[1] for entry in servers}


def client_addresses(servers: dict[int, str]) -> list[str]:
    out = []
    for _, entry in sorted(servers.items()):
        host = entry.split(":", 1)[0]
        client = entry.split(";", 1)[1]
        out.append(f"{host}:{client.rsplit(':', 1)[-1]}")
    return out


@pytest.fixture(scope="module")
def host_brokers(tmp_path_factory) -> dict[str, tuple[dict, BrokerConfig, list[str]]]:
    """Each broker-N.env through broker.yml and the image's entrypoint: {file name: (service, config, args)}."""
    out = {}
    for path in env_files("broker"):
        service = compose_service("broker", path)
        env = {**image_env_defaults(), **{k: str(v) for k, v in service["environment"].items()},
               "HOSTNAME": service.get("container_name", "broker")}
        config, args = run_image_entrypoint(["bash", str(ENTRYPOINT)], env, tmp_path_factory.mktemp(path.stem))
        out[path.name] = (service, config, args)
    return out


@pytest.mark.parametrize("role", ["zookeeper", "broker"])
def test_env_files_give_what_the_compose_file_references(role):
    required, optional = references((HOSTS / f"{role}.yml").read_text())
    assert required
    for path in env_files(role):
        values = read_env_file(path)
        assert required <= set(values), f"{path.name} lacks {sorted(required - set(values))}"
        assert all(values[name] for name in required), f"{path.name} leaves a required variable empty"
        unused = set(values) - required - optional
        assert not unused, f"{path.name} sets {sorted(unused)}, which {role}.yml never reads"


@pytest.mark.parametrize("role", ["zookeeper", "broker"])
def test_compose_file_is_one_host_networked_service(role):
    compose = yaml.safe_load((HOSTS / f"{role}.yml").read_text())
    (service,) = compose["services"].values()
    assert service["network_mode"] == "host"
    assert "ports" not in service  # host networking publishes nothing: the process binds the host's ports
    assert service["restart"] in ("unless-stopped", "always")
    assert service["healthcheck"]["test"]


def test_host_broker_env_becomes_a_config_the_broker_accepts(host_brokers):
    for name, (service, config, args) in host_brokers.items():
        values = read_env_file(HOSTS / name)
        assert config.broker_id == int(values["BROKER_ID"])
        assert config["broker.rack"] == values["BROKER_RACK"]
        (advertised,) = config.advertised_listeners
        (bound,) = config.listeners
        assert advertised.host == values["BROKER_HOST"] and advertised.port == bound.port
        assert args == [config.source, "--log-level", service["environment"].get("ZKAFKA_LOG_LEVEL", "INFO")]


def test_host_broker_kafka_variables_are_broker_configs(host_brokers):
    for name, (service, config, _) in host_brokers.items():
        keys = written_keys(config)
        assert keys <= BROKER_KEYS, f"{name}: not broker configs: {sorted(keys - BROKER_KEYS)}"
        variables = {k for k in service["environment"] if k.startswith("KAFKA_")} | set(image_env_defaults())
        assert {env_name(key) for key in keys} == variables


def test_host_brokers_are_distinct_and_racked(host_brokers):
    configs = [config for _, config, _ in host_brokers.values()]
    assert len({c.broker_id for c in configs}) == len(configs)
    assert len({c.advertised_listeners[0].host for c in configs}) == len(configs)
    assert all(c["broker.rack"] for c in configs)  # every broker or none: rack-aware placement
    assert len({c["broker.rack"] for c in configs}) == len(configs)


def test_host_brokers_connect_to_the_whole_ensemble(host_brokers):
    (servers,) = {json.dumps(ensemble(p), sort_keys=True) for p in env_files("zookeeper")}
    expected = client_addresses({int(k): v for k, v in json.loads(servers).items()})
    for _, config, _ in host_brokers.values():
        assert hosts_of(config.zookeeper_connect) == expected


def test_host_broker_health_check_and_stop_grace(host_brokers):
    for service, config, _ in host_brokers.values():
        check = " ".join(service["healthcheck"]["test"])
        assert f"127.0.0.1:{config.http_port}/readyz" in check
        assert seconds(service["stop_grace_period"]) >= controlled_shutdown_budget_s(config)


def test_host_zookeeper_nodes_form_one_ensemble():
    ids = []
    for path in env_files("zookeeper"):
        service = compose_service("zookeeper", path)
        env = service["environment"]
        servers = ensemble(path)
        assert int(env["ZOO_MY_ID"]) in servers, f"{path.name}: ZK_MY_ID is not a server.N of ZK_SERVERS"
        assert env["ZOO_SERVERS"] == read_env_file(path)["ZK_SERVERS"]
        ids.append(int(env["ZOO_MY_ID"]))
        for entry in servers.values():
            assert re.fullmatch(r"[\w.-]+:2888:3888;2181", entry), entry
        assert "127.0.0.1 2181" in " ".join(service["healthcheck"]["test"])
        assert {v.split(":", 1)[1] for v in service["volumes"]} >= {"/data", "/datalog"}
    assert sorted(ids) == sorted(ensemble(env_files("zookeeper")[0]))
    assert len({json.dumps(ensemble(p)) for p in env_files("zookeeper")}) == 1


# -- deploy/systemd ----------------------------------------------------------------------------------------

def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A systemd unit file: {section: {key: [values in order]}} (keys may repeat; backslash continues a line)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line[0] in "#;":
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        if line.startswith("["):
            assert line.endswith("]"), f"{path.name}: bad section line {line!r}"
            current = sections.setdefault(line[1:-1], {})
            continue
        key, sep, value = line.partition("=")
        assert sep and current is not None, f"{path.name}: not key=value in a section: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def one(unit: dict, section: str, key: str) -> str:
    values = unit[section].get(key)
    assert values, f"[{section}] has no {key}="
    return values[-1]


def command_line(value: str) -> list[str]:
    """ExecStart=: no unescaped $ (systemd would substitute it), then split as systemd does."""
    bare = value.replace("$$", "")
    assert "$" not in bare and "%" not in bare, f"systemd would expand part of {value!r}: write $$ or %%"
    return shlex.split(value.replace("$$", "$"))


def units() -> list[Path]:
    return sorted(SYSTEMD.glob("*.service"))


def project_scripts() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def unit_example(unit_path: Path) -> tuple[list[str], Path]:
    """The unit's ExecStart arguments, and the deploy/systemd example file its (one) file argument names."""
    args = command_line(one(read_unit(unit_path), "Service", "ExecStart"))[1:]
    (path,) = [a for a in args if a.startswith("/")]
    example = SYSTEMD / Path(path).name
    assert example.is_file(), f"{unit_path.name} runs {path}: ship its example as deploy/systemd/{example.name}"
    return args, example


@pytest.mark.parametrize("path", units(), ids=lambda p: p.name)
def test_unit_runs_a_project_entry_point(path):
    unit = read_unit(path)
    assert {"Unit", "Service", "Install"} <= set(unit)
    argv = command_line(one(unit, "Service", "ExecStart"))
    assert argv[0].startswith("/opt/zkafka/bin/")
    name = Path(argv[0]).name
    scripts = project_scripts()
    assert name in scripts, f"{name} is not a [project.scripts] entry point"
    module, _, function = scripts[name].partition(":")
    assert callable(getattr(importlib.import_module(module), function))


@pytest.mark.parametrize("path", units(), ids=lambda p: p.name)
def test_unit_stops_with_sigterm_and_restarts_on_failure(path):
    unit = read_unit(path)
    assert one(unit, "Service", "KillSignal") == "SIGTERM"
    assert one(unit, "Service", "Restart") == "on-failure"
    assert one(unit, "Service", "User") not in ("root", "0")
    assert int(one(unit, "Service", "LimitNOFILE")) >= 65536
    assert one(unit, "Install", "WantedBy") == "multi-user.target"
    assert "network-online.target" in one(unit, "Unit", "After")


def test_broker_unit_runs_the_example_server_properties():
    path = SYSTEMD / "zkafka-broker.service"
    args, example = unit_example(path)
    parsed = broker_main.parse_args(args)
    assert parsed.config.name == example.name == "server.properties"
    config = BrokerConfig.from_file(example)
    unit = read_unit(path)
    assert seconds(one(unit, "Service", "TimeoutStopSec")) >= controlled_shutdown_budget_s(config)
    writable = [Path(p) for value in unit["Service"]["ReadWritePaths"] for p in value.split()]
    writable.append(Path("/var/lib") / one(unit, "Service", "StateDirectory"))
    for log_dir in config.log_dirs:
        assert any(log_dir.is_relative_to(w) for w in writable), f"log dir {log_dir} is read-only for the unit"
    assert one(unit, "Service", "RestartPreventExitStatus") == "2"  # a bad config: restarting will not help


def test_example_server_properties_is_a_multi_host_broker():
    config = BrokerConfig.from_file(SYSTEMD / "server.properties")
    assert config["broker.rack"]
    (advertised,) = config.advertised_listeners
    assert advertised.host not in ("", "0.0.0.0", "127.0.0.1", "localhost")
    assert config.listeners[0].port == advertised.port
    assert len(hosts_of(config.zookeeper_connect)) == 3
    assert config["default.replication.factor"] == 3
    assert config["min.insync.replicas"] == 2
    assert config["offsets.topic.replication.factor"] == 3
    assert config["transaction.state.log.replication.factor"] == 3
    assert config["unclean.leader.election.enable"] is False


def zookeeper_unit_env(unit: dict) -> dict[str, str]:
    env = {}
    for value in unit["Service"].get("EnvironmentFile", []):
        example = SYSTEMD / Path(value.lstrip("-")).name
        assert example.is_file(), f"EnvironmentFile {value}: ship its example as deploy/systemd/{example.name}"
        for key, raw in read_env_file(example).items():
            env[key] = raw[1:-1] if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "\"'" else raw
    for value in unit["Service"].get("Environment", []):
        for item in shlex.split(value):
            key, _, raw = item.partition("=")
            env[key] = raw
    return env


def test_zookeeper_unit_starts_the_example_properties(tmp_path):
    path = SYSTEMD / "zkafka-zookeeper.service"
    unit = read_unit(path)
    args, example = unit_example(path)
    env = zookeeper_unit_env(unit)
    java_home = tmp_path / "jre"
    (java_home / "bin").mkdir(parents=True)
    stub(java_home / "bin" / "java", "exit 0")
    run_env = {**env, "JAVA_HOME": str(java_home), "ZOOKEEPER_CLASSPATH": "/opt/zookeeper/lib/*",
               "LOG_DIR": str(tmp_path / "logs")}
    command, daemon, _ = zookeeper_server_start.prepare([str(example) if a.startswith("/") else a for a in args],
                                                        run_env)
    assert not daemon  # foreground: systemd supervises the JVM itself
    assert command[-2:] == ["org.apache.zookeeper.server.quorum.QuorumPeerMain", str(example.resolve())]
    heap = shlex.split(env["KAFKA_HEAP_OPTS"])
    assert command[1:1 + len(heap)] == heap and "-Xmx128m" not in command
    writable = [Path(p) for value in unit["Service"]["ReadWritePaths"] for p in value.split()]
    props = parse_properties(example.read_text(), str(example))
    for key in ("dataDir", "dataLogDir"):
        assert any(Path(props[key]).is_relative_to(w) for w in writable), f"{key} is read-only for the unit"
    assert any(Path(env["LOG_DIR"]).is_relative_to(w) for w in writable)
    assert seconds(one(unit, "Service", "TimeoutStopSec")) >= 30
    assert "143" in one(unit, "Service", "SuccessExitStatus").split()  # the JVM's exit on SIGTERM


def test_zookeeper_properties_is_one_node_of_a_three_node_ensemble():
    props = parse_properties((SYSTEMD / "zookeeper.properties").read_text())
    check_zookeeper_properties(props, "zookeeper.properties")
    servers = {int(k.removeprefix("server.")): v for k, v in props.items() if k.startswith("server.")}
    assert sorted(servers) == [1, 2, 3]
    env = zookeeper_unit_env(read_unit(SYSTEMD / "zkafka-zookeeper.service"))
    assert int(env["ZOOKEEPER_MYID"]) in servers
    broker = BrokerConfig.from_file(SYSTEMD / "server.properties")
    expected = [f"{servers[i].split(':', 1)[0]}:{props['clientPort']}" for i in sorted(servers)]
    assert hosts_of(broker.zookeeper_connect) == expected
    assert int(props["initLimit"]) * int(props["tickTime"]) >= 10000


def myid_step(tmp_path: Path) -> tuple[list[str], Path]:
    """The ZooKeeper unit's ExecStartPre, pointed at a data dir under ``tmp_path``."""
    unit = read_unit(SYSTEMD / "zkafka-zookeeper.service")
    props = parse_properties((SYSTEMD / "zookeeper.properties").read_text())
    (pre,) = unit["Service"]["ExecStartPre"]
    argv = command_line(pre)
    assert argv[0] == "/bin/sh" and props["dataDir"] in argv[-1]
    data_dir = tmp_path / "data"
    return [*argv[:-1], argv[-1].replace(props["dataDir"], str(data_dir))], data_dir / "myid"


@pytest.mark.parametrize("existing, given, code, written", [(None, "2", 0, "2"), ("3", "2", 0, "3"),
                                                             (None, "", 1, None), (None, "x", 1, None)])
def test_zookeeper_unit_writes_myid_once(tmp_path, existing, given, code, written):
    argv, myid = myid_step(tmp_path)
    if existing:
        myid.parent.mkdir(parents=True)
        myid.write_text(existing + "\n")
    env = {"PATH": "/usr/bin:/bin", **({"ZOOKEEPER_MYID": given} if given else {})}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=20)
    assert (done.returncode != 0) == bool(code), done.stderr
    assert (myid.read_text().strip() if myid.exists() else None) == written


# -- the three ways agree ----------------------------------------------------------------------------------

DURABILITY = ("default.replication.factor", "min.insync.replicas", "offsets.topic.replication.factor",
              "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
              "unclean.leader.election.enable", "controlled.shutdown.enable", "controlled.shutdown.max.retries",
              "controlled.shutdown.retry.backoff.ms", "controller.socket.timeout.ms", "http.port")


def test_compose_kubernetes_and_systemd_brokers_agree_on_durability(k8s_broker, host_brokers):
    systemd = BrokerConfig.from_file(SYSTEMD / "server.properties")
    configs = {"systemd": systemd, "kubernetes": k8s_broker[0],
               **{name: config for name, (_, config, _) in host_brokers.items()}}
    for key in DURABILITY:
        assert len({repr(c[key]) for c in configs.values()}) == 1, \
            f"{key}: {{{', '.join(f'{n}: {c[key]}' for n, c in configs.items())}}}"
    assert systemd["min.insync.replicas"] < systemd["default.replication.factor"]  # one broker may be down

