"""The broker pod's init container: this pod's rack is its node's zone.

The downward API cannot read a node's labels, so this asks the Kubernetes API for the node the pod was
scheduled on (NODE_NAME, from spec.nodeName) with the pod's ServiceAccount token (the ClusterRole
zkafka-node-reader grants `get` on nodes) and writes the value of its RACK_LABEL label
(topology.kubernetes.io/zone) to RACK_FILE, which broker-start.sh turns into broker.rack.

A node without that label stops the pod here (the init container fails and is retried) unless RACK_FALLBACK
names a rack: Kafka's rack-aware placement wants broker.rack on every broker or on none, so a broker must
not quietly come up without one. Standard library only: it runs in the zkafka image's python3.
"""
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def api_base(env):
    """KUBERNETES_API if set, else the in-cluster address Kubernetes gives every container."""
    if env.get("KUBERNETES_API"):
        return env["KUBERNETES_API"].rstrip("/")
    host = env.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
    port = env.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"https://{host}:{port}"


def node_labels(base, node, account_dir):
    with open(os.path.join(account_dir, "token"), encoding="utf-8") as f:
        token = f.read().strip()
    context = None
    if base.startswith("https:"):
        context = ssl.create_default_context(cafile=os.path.join(account_dir, "ca.crt"))
    request = urllib.request.Request(f"{base}/api/v1/nodes/{urllib.parse.quote(node)}",
                                     headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.load(response).get("metadata", {}).get("labels") or {}


def main(env):
    node = env.get("NODE_NAME", "")
    label = env.get("RACK_LABEL") or "topology.kubernetes.io/zone"
    out = env.get("RACK_FILE") or "/etc/zkafka-rack/rack"
    if not node:
        print("node-rack: NODE_NAME is not set (env from fieldRef spec.nodeName)", file=sys.stderr)
        return 1
    try:
        labels = node_labels(api_base(env), node, env.get("SERVICE_ACCOUNT_DIR") or SERVICE_ACCOUNT)
    except urllib.error.HTTPError as exc:
        print(f"node-rack: GET node {node}: HTTP {exc.code} {exc.reason} (the ServiceAccount needs `get` on nodes: "
              "ClusterRole zkafka-node-reader)", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"node-rack: GET node {node}: {exc}", file=sys.stderr)
        return 1
    rack = labels.get(label, "").strip() or env.get("RACK_FALLBACK", "").strip()
    if not rack:
        print(f"node-rack: node {node} has no label {label} and RACK_FALLBACK is empty: label the node, or set "
              "RACK_FALLBACK (every broker needs a rack, or none)", file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write(rack + "\n")
    os.replace(out + ".tmp", out)
    print(f"node-rack: node {node} {label}={labels.get(label, '')!r}: broker.rack={rack}")
    return 0


if __name__ == "__main__":
    sys.exit(main(dict(os.environ)))
