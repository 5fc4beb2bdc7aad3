"""Incremental fetch sessions (KIP-227), the fetcher side: Kafka's ``FetchSessionHandler``, pure.

One handler per connection to a leader. ``build`` turns the partitions to fetch this round (each with
the fields of its Fetch partition: fetch offset, epochs, log start, max bytes) into a request:

* **full** (epoch 0) while there is no session: every partition. ``session_id`` is the session to close
  (after a wrong-epoch answer or a reconnect), else 0; the leader answers with the new session's id (0:
  it had no slot; the next request is full again);
* **incremental** (the session's id and epoch): only the partitions added or whose fields changed since
  they were last sent, and as ``forgotten`` those in the session no longer fetched (a leader change,
  a partition backed off or throttled this round).

``handle_response`` moves the epoch on, or drops the session on FETCH_SESSION_ID_NOT_FOUND (start over:
full, session 0) and INVALID_FETCH_SESSION_EPOCH (full, closing that session), as Kafka's client does.
An incremental answer omits the partitions with nothing new: the caller leaves them as they are.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable

from brokers.protocol.errors import ErrorCode
from brokers.replication.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch


@dataclass(frozen=True)
class FetchSessionRequest:
    """What one Fetch carries: its session metadata, the partitions to name and those to forget."""

    session_id: int
    epoch: int
    partitions: dict[Hashable, Any]  # key -> the partition's fetch fields (anything comparable)
    forgotten: tuple[Hashable, ...]
    full: bool


@dataclass
class FetchSessionHandler:
    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH  # the next request's epoch; 0: full
    sent: dict[Hashable, Any] = field(default_factory=dict)  # the session's partitions as the leader has them

    def build(self, wanted: dict[Hashable, Any], changed: Iterable[Hashable] | None = None) -> FetchSessionRequest:
        """The request for this round's partitions (``wanted``: key -> fetch fields). ``changed``: the only
        keys whose fields or presence may differ from the last request's (the caller's promise; an idle
        partition then costs nothing here); None compares every key."""
        if self.epoch == INITIAL_EPOCH:
            return FetchSessionRequest(self.session_id, INITIAL_EPOCH, dict(wanted), (), True)
        sent = self.sent
        keys = [*wanted, *(key for key in sent if key not in wanted)] if changed is None else changed
        named = {key: wanted[key] for key in keys if key in wanted and sent.get(key) != wanted[key]}
        forgotten = tuple(key for key in keys if key in sent and key not in wanted)
        return FetchSessionRequest(self.session_id, self.epoch, named, forgotten, False)

    def handle_response(self, request: FetchSessionRequest, error_code: int, session_id: int) -> bool:
        """Update the session after the answer to ``request``; False when the answer is a session error
        (no partitions in it: fetch again, in full)."""
        if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
            self.reset(close=False)
            return False
        if error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH:
            self.reset(close=True)
            return False
        if error_code != ErrorCode.NONE:
            self.reset(close=True)
            return True
        if session_id == INVALID_SESSION_ID:  # sessionless answer (no slot, or the session was closed)
            self.reset(close=False)
            return True
        if request.full:
            self.session_id, self.epoch, self.sent = session_id, next_epoch(INITIAL_EPOCH), dict(request.partitions)
            return True
        self.sent.update(request.partitions)
        for key in request.forgotten:
            self.sent.pop(key, None)
        self.epoch = next_epoch(self.epoch)
        return True

    def reset(self, close: bool = True) -> None:
        """Back to full requests (a connection lost, an error): ``close`` names the old session in the
        next full request, so the leader frees its slot."""
        self.session_id = self.session_id if close else INVALID_SESSION_ID
        self.epoch, self.sent = INITIAL_EPOCH, {}
