"""Waiting for the Lease at startup (controller.lease), alive but acting on nothing.

kopf starts its watches, handlers and liveness endpoint only once the startup handlers are done, so a
standby waits inside its startup handler. Meanwhile it answers the liveness endpoint kopf was given
(``--liveness=http://HOST:PORT/PATH``) itself with ``200 standby``: the pod's liveness probe must not
restart a healthy standby. That endpoint closes before kopf opens its own there.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Sequence
from urllib.parse import urlsplit

from aiohttp import web

from kafka_balancer.controller.lease import Lease

log = logging.getLogger(__name__)


def liveness_endpoint(argv: Sequence[str]) -> tuple[str, int, str] | None:
    """kopf's ``--liveness`` URL from its command line, as (host, port, path); None when not given."""
    url = None
    for i, arg in enumerate(argv):
        if arg.startswith("--liveness="):
            url = arg.partition("=")[2]
        elif arg == "--liveness" and i + 1 < len(argv):
            url = argv[i + 1]
    if not url:
        return None
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        return None
    return parts.hostname, parts.port, parts.path or "/"


async def _answer_alive(endpoint: tuple[str, int, str]) -> web.AppRunner:
    host, port, path = endpoint

    async def standby(_request: web.Request) -> web.Response:
        return web.Response(text="standby: waiting for the Lease\n")

    app = web.Application()
    app.router.add_get(path, standby)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, reuse_address=True).start()
    return runner


async def wait_for_lease(lease: Lease, argv: Sequence[str]) -> None:
    """Return once this process holds the Lease; answer the liveness endpoint meanwhile."""
    if await asyncio.to_thread(lease.try_acquire):
        return
    endpoint = liveness_endpoint(argv)
    runner = await _answer_alive(endpoint) if endpoint is not None else None
    try:
        log.info("standby: Lease %s/%s is held by %s", lease.settings.namespace, lease.settings.name, lease.holder)
        while not await asyncio.to_thread(lease.try_acquire):
            await asyncio.sleep(lease.settings.renew_every)
    finally:
        if runner is not None:
            await runner.cleanup()


def stop_this_process(*, own_process: bool) -> None:
    """Leave: kopf shuts down on SIGTERM as on any other (its cleanup detaches the executions), and the
    Deployment starts the process again, as a standby. Only where kopf owns the process (``kopf run``,
    its loop on the main thread): embedded (a test's KopfRunner), the operator stays, acting on nothing."""
    if own_process:
        os.kill(os.getpid(), signal.SIGTERM)
