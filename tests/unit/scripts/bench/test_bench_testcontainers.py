from scripts.bench.testcontainers import format_report, one_round, summary


class Target:
    ready_seconds = 0.5

    def __init__(self, events):
        self.events = events

    def get_bootstrap_server(self):
        return "h:1"

    def start(self):
        self.events.append("start")

    def stop(self):
        self.events.append("stop")


def test_one_round_times_start_first_ack_and_stop_in_order(monkeypatch):
    events: list = []
    monkeypatch.setattr("scripts.bench.testcontainers.first_ack", lambda bootstrap: events.append(f"ack {bootstrap}"))
    result = one_round(lambda: Target(events))
    assert events == ["start", "ack h:1", "stop"]
    assert 0 <= result["start_s"] <= result["first_ack_s"] and result["ready_probe_s"] == 0.5


def test_summary_and_report():
    rounds = [{"start_s": s, "ready_probe_s": s / 2, "first_ack_s": s + 0.1, "stop_s": 1.0} for s in (1.0, 3.0, 2.0)]
    s = summary(rounds)
    assert s["start_s"] == {"min": 1.0, "median": 2.0, "max": 3.0}
    lines = format_report({"rounds": 3, "machine_line": "m", "brokers": 3, "zookeepers": 3,
                           "kinds": {"container": {"summary": s, "goal_s": 3.0}}})
    assert "| ZkafkaContainer (1 broker + its ZooKeeper) | 2.00 (1.00–3.00) | 2.10 (1.10–3.10) | 1.00 (1.00–1.00) | ≤ 3 s |" in lines
