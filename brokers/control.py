"""Control-plane messages: what the controller tells brokers, and what brokers ask the controller or each other.

Modelled on Kafka 2.8's LeaderAndIsr (api key 4), UpdateMetadata (6), StopReplica (5) and
ControlledShutdown (7) schemas (reference §2.6), with Python field names; VerifyTransaction is a partition
leader asking a transaction coordinator on another broker (KIP-890 part 1). Every message is a frozen
dataclass; ``encode`` turns it into a msgpack map and ``decode(cls, data)`` back, checking every field's
type on the way in. Malformed input raises ``ControlMessageError`` (a ValueError) naming the field,
e.g. ``LeaderAndIsrRequest.partition_states[0].leader_epoch: missing field``.

Fencing helpers (reference §2.2): ``check_controller_epoch`` and ``check_broker_epoch``.

Imports only msgpack, ``brokers.model`` and ``brokers.protocol.errors`` (ARCHITECTURE §2).
"""
from __future__ import annotations

import types
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints

import msgpack

from brokers.model import BrokerInfo, EndPoint
from brokers.protocol.errors import ErrorCode

__all__ = [
    "BrokerInfo", "EndPoint", "ErrorCode",
    "PartitionState", "StopReplicaPartition",
    "LeaderAndIsrRequest", "LeaderAndIsrResponse",
    "UpdateMetadataRequest", "UpdateMetadataResponse",
    "StopReplicaRequest", "StopReplicaResponse",
    "ControlledShutdownRequest", "ControlledShutdownResponse",
    "VerifyTransactionRequest", "VerifyTransactionResponse",
    "ControlRequest", "ControlResponse", "ControlApi", "CONTROL_APIS", "api_for",
    "ControlRequestHandler", "ControlMessageError", "encode", "decode",
    "UNKNOWN_BROKER_EPOCH", "check_controller_epoch", "check_broker_epoch",
]

UNKNOWN_BROKER_EPOCH = -1  # Kafka's AbstractControlRequest.UNKNOWN_BROKER_EPOCH: "not set"


# -- messages --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's state as the controller decided it (LeaderAndIsr / UpdateMetadata)."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    is_new: bool = False
    offline_replicas: tuple[int, ...] = ()
    topic_id: str = ""  # the topic's id as in its znode (Kafka's Uuid text), "" while it has none


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: tuple[PartitionState, ...]
    live_leaders: tuple[BrokerInfo, ...]


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponse:
    error_code: int
    partition_errors: tuple[tuple[str, int, int], ...] = ()  # (topic, partition, error code)


@dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: tuple[PartitionState, ...]
    live_brokers: tuple[BrokerInfo, ...]


@dataclass(frozen=True, slots=True)
class UpdateMetadataResponse:
    error_code: int


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    """StopReplica v3's per-partition entry; leader_epoch -2 while the topic is queued for deletion."""

    topic: str
    partition: int
    leader_epoch: int
    delete: bool


@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]


@dataclass(frozen=True, slots=True)
class StopReplicaResponse:
    error_code: int
    partition_errors: tuple[tuple[str, int, int], ...] = ()  # (topic, partition, error code)


@dataclass(frozen=True, slots=True)
class ControlledShutdownRequest:
    """Broker -> controller: "I am shutting down, move my leaderships away"."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class ControlledShutdownResponse:
    error_code: int
    remaining_partitions: tuple[tuple[str, int], ...] = ()  # (topic, partition) still led by the broker


@dataclass(frozen=True, slots=True)
class VerifyTransactionRequest:
    """Partition leader -> transaction coordinator (KIP-890 part 1, Kafka's verify-only AddPartitionsToTxn): is
    ``topic``-``partition`` in the ongoing transaction of ``transactional_id`` at this producer id and epoch?"""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class VerifyTransactionResponse:
    error_code: int  # NONE: it is; else the coordinator's answer (INVALID_TXN_STATE, NOT_COORDINATOR, ...)


ControlRequest = Union[LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest, ControlledShutdownRequest,
                       VerifyTransactionRequest]
ControlResponse = Union[LeaderAndIsrResponse, UpdateMetadataResponse, StopReplicaResponse, ControlledShutdownResponse,
                        VerifyTransactionResponse]


@dataclass(frozen=True, slots=True)
class ControlApi:
    """One control endpoint: handler method name, HTTP path, request and response types."""

    method: str
    path: str
    request: type
    response: type


CONTROL_APIS: tuple[ControlApi, ...] = (
    ControlApi("leader_and_isr", "/control/v1/leader-and-isr", LeaderAndIsrRequest, LeaderAndIsrResponse),
    ControlApi("update_metadata", "/control/v1/update-metadata", UpdateMetadataRequest, UpdateMetadataResponse),
    ControlApi("stop_replica", "/control/v1/stop-replica", StopReplicaRequest, StopReplicaResponse),
    ControlApi("controlled_shutdown", "/control/v1/controlled-shutdown", ControlledShutdownRequest,
               ControlledShutdownResponse),
    ControlApi("verify_transaction", "/control/v1/verify-txn", VerifyTransactionRequest, VerifyTransactionResponse),
)
_API_BY_REQUEST = {api.request: api for api in CONTROL_APIS}


def api_for(request: object) -> ControlApi:
    """The endpoint that serves ``request`` (an instance or a request class)."""
    cls = request if isinstance(request, type) else type(request)
    try:
        return _API_BY_REQUEST[cls]
    except KeyError:
        raise TypeError(f"not a control request: {cls.__name__}") from None


class ControlRequestHandler(Protocol):
    """What a broker's HTTP server dispatches control requests to (brokers.app implements it)."""

    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse: ...

    async def update_metadata(self, request: UpdateMetadataRequest) -> UpdateMetadataResponse: ...

    async def stop_replica(self, request: StopReplicaRequest) -> StopReplicaResponse: ...

    async def controlled_shutdown(self, request: ControlledShutdownRequest) -> ControlledShutdownResponse: ...

    async def verify_transaction(self, request: VerifyTransactionRequest) -> VerifyTransactionResponse: ...

    def health(self) -> dict: ...


# -- fencing (reference §2.2) ----------------------------------------------------------------------
def check_controller_epoch(remembered_epoch: int, request_epoch: int) -> bool:
    """True if a request from controller epoch ``request_epoch`` may be applied.

    A broker remembers the highest controller epoch it has seen; a lower one is a deposed controller
    (STALE_CONTROLLER_EPOCH), an equal or higher one is accepted (and becomes the remembered value).
    """
    return request_epoch >= remembered_epoch


def check_broker_epoch(own_epoch: int, request_epoch: int) -> bool:
    """True unless the request is addressed to an older registration of this broker (KIP-380).

    ``-1`` in the request means "not set" (old request versions) and is accepted, as Kafka does.
    """
    return request_epoch == UNKNOWN_BROKER_EPOCH or request_epoch >= own_epoch


# -- encoding --------------------------------------------------------------------------------------
class ControlMessageError(ValueError):
    """A control message that cannot be decoded; ``field`` is the dotted path of the bad field."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


M = TypeVar("M")
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


_SCALARS = (str, int, bool, bytes, float, type(None))
_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, in order
_PLANS: dict[type, tuple[tuple[str, Any, bool], ...]] = {}  # (name, type hint, required) per field
_SHAPES: dict[Any, tuple[Any, tuple]] = {}  # a generic hint's (origin, args)


def _to_wire(value: Any) -> Any:
    """Dataclasses -> maps, tuples -> arrays, int subclasses (IntEnum) -> int; the rest as is. A LeaderAndIsr or
    UpdateMetadata of thousands of partitions goes through here, so field names are looked up once per class."""
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is tuple or cls is list:
        return [_to_wire(item) for item in value]
    names = _NAMES.get(cls)
    if names is None and is_dataclass(value) and not isinstance(value, type):
        names = _NAMES[cls] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: _to_wire(getattr(value, name)) for name in names}
    if isinstance(value, (tuple, list)):
        return [_to_wire(item) for item in value]
    if isinstance(value, (str, bytes, float)):
        return value
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"cannot encode a {type(value).__name__} in a control message")


def _type_name(value: Any) -> str:
    return "nil" if value is None else type(value).__name__


def _path(where: Any) -> str:
    """A field's dotted path, built only for an error: ``where`` is a name or (parent, field name or index)."""
    if isinstance(where, str):
        return where
    parent, key = where
    return f"{_path(parent)}[{key}]" if isinstance(key, int) else f"{_path(parent)}.{key}"


def _shape(hint: Any) -> tuple[Any, tuple]:
    shape = _SHAPES.get(hint)
    if shape is None:
        shape = _SHAPES[hint] = (get_origin(hint), get_args(hint))
    return shape


def _from_wire(hint: Any, value: Any, where: Any) -> Any:
    """Check ``value`` against the type hint and build it (recursively for dataclasses and tuples)."""
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint in _PLANS or is_dataclass(hint):
        return _dataclass_from_wire(hint, value, where)
    else:
        origin, args = _shape(hint)
        if origin in (Union, types.UnionType):
            if value is None and type(None) in args:
                return None
            others = [arg for arg in args if arg is not type(None)]
            if len(others) != 1:
                raise TypeError(f"unsupported union {hint} at {_path(where)}")
            return _from_wire(others[0], value, where)
        if origin is tuple:
            if not isinstance(value, (list, tuple)):
                raise ControlMessageError(_path(where), f"expected an array, got {_type_name(value)}")
            if len(args) == 2 and args[1] is Ellipsis:
                if args[0] is int and all(type(item) is int for item in value):
                    return tuple(value)  # replicas, ISRs: the common case, checked in one pass
                return tuple(_from_wire(args[0], item, (where, i)) for i, item in enumerate(value))
            if len(value) != len(args):
                raise ControlMessageError(_path(where), f"expected {len(args)} elements, got {len(value)}")
            return tuple(_from_wire(arg, item, (where, i)) for i, (arg, item) in enumerate(zip(args, value)))
        raise TypeError(f"unsupported field type {hint!r} at {_path(where)}")
    name = getattr(hint, "__name__", str(hint))
    raise ControlMessageError(_path(where), f"expected {name}, got {_type_name(value)}")


def _plan(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = _hints(cls)
        plan = _PLANS[cls] = tuple((f.name, hints[f.name], f.default is MISSING and f.default_factory is MISSING)
                                   for f in fields(cls))  # type: ignore[arg-type]
    return plan


def _dataclass_from_wire(cls: type[M], value: Any, where: Any) -> M:
    if not isinstance(value, dict):
        raise ControlMessageError(_path(where), f"expected a map, got {_type_name(value)}")
    kwargs = {}
    for name, hint, required in _plan(cls):
        if name not in value:
            if required:
                raise ControlMessageError(_path((where, name)), "missing field")
            continue
        item = value[name]
        if type(item) is hint and hint is not float:  # an int, str or bool where one belongs: nothing to check
            kwargs[name] = item
        else:
            kwargs[name] = _from_wire(hint, item, (where, name))
    return cls(**kwargs)  # unknown keys are ignored, like tagged fields a newer sender may add


def pack(value: Any) -> bytes:
    """Plain data (maps, lists, str, bytes, numbers, None) as msgpack: the broker's one msgpack writer
    (control messages here, the HTTP layer's msgpack answers and forwarded bodies)."""
    return msgpack.packb(value, use_bin_type=True)


def unpack(data: bytes) -> Any:
    """The broker's one msgpack reader; a malformed document is a ValueError saying why."""
    try:
        return msgpack.unpackb(data, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise ValueError(f"not a msgpack document ({exc})") from None


def encode(message: Any) -> bytes:
    """A control message (or any of its parts) as a msgpack map."""
    if not is_dataclass(message) or isinstance(message, type):
        raise TypeError(f"not a control message: {type(message).__name__}")
    return pack(_to_wire(message))


def decode(cls: type[M], data: bytes) -> M:
    """Parse and check ``data`` as a ``cls``; ControlMessageError (ValueError) names the bad field."""
    if not is_dataclass(cls):
        raise TypeError(f"not a control message type: {cls!r}")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ControlMessageError(cls.__name__, f"expected bytes, got {_type_name(data)}")
    try:
        value = unpack(data)
    except ValueError as exc:
        raise ControlMessageError(cls.__name__, str(exc)) from None
    return _dataclass_from_wire(cls, value, cls.__name__)


_UNSPECIFIED_HOSTS = ("", "0.0.0.0", "::")


def control_base_url(broker: BrokerInfo) -> str:
    """``http://host:http_port`` (``https://`` when it registered so) of a broker: its first endpoint's
    host, wildcard hosts -> 127.0.0.1."""
    host = broker.endpoints[0].host if broker.endpoints else ""
    if host in _UNSPECIFIED_HOSTS:
        host = "127.0.0.1"
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if broker.http_port is None:
        raise ValueError(f"broker {broker.id} registered no http port")
    return f"{broker.http_scheme}://{host}:{broker.http_port}"
