"""A broker's own control-plane calls to the controller (ControlledShutdown), over aiohttp."""
from __future__ import annotations

import ssl

import aiohttp

from brokers.control import api_for, control_base_url, decode, encode
from brokers.model import BrokerInfo
from brokers.security.control_auth import signed_headers

MSGPACK = "application/msgpack"


async def post_control(broker: BrokerInfo, request, timeout_s: float = 30.0, secret: bytes | None = None,
                       ssl_context: ssl.SSLContext | None = None):
    """POST one control request to ``broker`` (signed with the control-plane ``secret``; over https, its
    certificate checked with ``ssl_context``, when it registered an https port) and decode its answer;
    failures raise ConnectionError."""
    api = api_for(request)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    body = encode(request)
    headers = {"Content-Type": MSGPACK, **signed_headers(secret, "POST", api.path, body)}
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(control_base_url(broker) + api.path, data=body, headers=headers,
                                    ssl=ssl_context or True) as response:
                if response.status != 200:
                    raise ConnectionError(f"{api.path} answered HTTP {response.status}: {await response.text()}")
                return decode(api.response, await response.read())
    except aiohttp.ClientError as exc:
        raise ConnectionError(f"{api.path} to broker {broker.id}: {exc}") from exc
