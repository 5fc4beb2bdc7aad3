"""The broker's HTTP side (aiohttp): control endpoints, health, admin API, /metrics, REST proxy, dashboard;
the only aiohttp server in zkafka. ``brokers.http.server`` is the entry point; this package re-exports nothing."""
