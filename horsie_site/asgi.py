"""HTTP, websockets and the turn-worker channel, wired in one ordered place.

Django's ASGI application (its handler, with request threads kept for reuse) is built before
anything imports consumers or models. Every
process that loads this module (`daphne`, `manage.py runworker`) also runs the scheduler and
warms the providers' SDKs and compiles the hot queries, so the first turn it serves costs what
the tenth does.
"""

from __future__ import annotations

import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "horsie_site.settings")
django.setup(set_prefix=False)  # what get_asgi_application() does, for a handler of our own

from horsie_site import compiled, content_types, readiness  # noqa: E402
from horsie_site.request_threads import PooledASGIHandler  # noqa: E402

django_asgi_app = PooledASGIHandler()

from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import re_path  # noqa: E402

import harness.providers.openai_chat  # noqa: E402, F401  (the SDK's import, ~2 s, not on a turn)
from harness.providers.warm import warm_then_freeze  # noqa: E402
from sessions_app.dispatcher import TURN_CHANNEL  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402
from sessions_app.scheduler import Scheduler  # noqa: E402
from sessions_app.worker import TurnConsumer  # noqa: E402
from teams_app.websocket import NoSuchSocket, SocketAuthMiddleware  # noqa: E402

# Token or (from an allowed origin) cookie; every refusal is an accepted socket then closed.
sockets = URLRouter([*websocket_urlpatterns, re_path(r"", NoSuchSocket.as_asgi())])

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SocketAuthMiddleware(sockets),
        "channel": ChannelNameRouter({TURN_CHANNEL: TurnConsumer.as_asgi()}),
    }
)

content_types.install()  # daphne's twisted: a content type is parsed once, not per request

# What is loaded by now lives as long as the process: out of the collector's full walks, each
# of which took 100-200 ms in the middle of a turn. Freezing costs no walk (nothing is
# collected first), so it is safe while nothing runs; warming freezes what it loads too.
gc.freeze()

if settings.HORSIE["SCHEDULER"]:
    Scheduler.start()  # timers and takeovers, in every daphne and runworker process
if settings.HORSIE["WARM"]:
    # On threads of their own, once serving; `GET /api/v1/health` is ready when both are done.
    readiness.soon("provider SDKs", warm_then_freeze, delay=1.0)  # their one-time costs
    readiness.soon("hot queries", compiled.compile_logged, delay=1.0)  # their SQL
