"""The broker's HTTP side (aiohttp): control endpoints, health; the only aiohttp server in zkafka."""
from brokers.http.server import HttpServer, create_app

__all__ = ["HttpServer", "create_app"]
