"""``check(ops, config, availability) -> CheckResult``: every check over one set of indexes."""
from __future__ import annotations

from typing import Iterable

from scripts.soak.checker.availability import check_availability
from scripts.soak.checker.eos import check_eos
from scripts.soak.checker.groups import check_groups, groups_of
from scripts.soak.checker.index import HistoryIndex
from scripts.soak.checker.model import Availability, CheckConfig, CheckResult, Findings
from scripts.soak.checker.polls import check_polls
from scripts.soak.checker.sends import check_acked, check_offsets, check_send_order
from scripts.soak.checker.transactions import check_aborted_reads, check_transactions
from scripts.soak.history import Op


def check(ops: Iterable[Op], config: CheckConfig = CheckConfig(),
          availability: Availability | None = None) -> CheckResult:
    index = HistoryIndex(ops, read_committed=config.read_committed)
    findings = Findings()
    check_offsets(index, findings)
    check_acked(index, findings)
    check_send_order(index, findings)
    check_polls(index, findings)
    check_groups(index, config, findings)
    check_aborted_reads(index, findings)
    check_transactions(index, findings)
    check_eos(index, config, findings)
    check_availability(availability, config, findings)
    stats = index.stats_json()
    stats["groups"] = {",".join(sorted(t)): sorted(m) for t, m in groups_of(index).items()}
    return findings.result(config, stats)
