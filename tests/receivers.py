"""Real receiving ends for the delivery tests: an SMTP server (aiosmtpd) and an HTTP receiver (werkzeug).

Both run in this process on 127.0.0.1, in threads, and keep what they received.
"""
import asyncio
import base64
import threading
from email import message_from_bytes, policy

from aiosmtpd.controller import Controller
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from tests.ports import free_port

# A Standard Webhooks secret: "whsec_" + base64 of 32 bytes.
NOTIFY_SECRET = "whsec_" + base64.b64encode(b"test-notify-webhook-secret-0123").decode()


class SmtpSink:
    """An aiosmtpd server that keeps every message it accepts in ``messages`` (``EmailMessage``s).

    ``reply`` set to an SMTP reply (e.g. ``"451 4.3.0 try again later"``) refuses messages with it;
    ``delay`` (seconds) slows each acceptance; ``stop()`` and ``start()`` take it down and up again
    on the same port.
    """

    def __init__(self, port=None, delay=0.0):
        self.port, self.delay = port or free_port(), delay
        self.messages, self.reply, self.controller = [], None, None
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.reply:
            return self.reply
        with self._lock:
            self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 OK"

    def start(self):
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()
        return self

    def stop(self):
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def message_ids(self):
        with self._lock:
            return [message["Message-ID"] for message in self.messages]


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        pass


class HttpReceiver:
    """A threaded HTTP server that keeps every request as ``(headers, body bytes)`` and answers ``status``."""

    def __init__(self):
        self.requests, self.status = [], 204
        self._lock = threading.Lock()
        self.server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=_Quiet)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/subscriptions"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def _app(self, environ, start_response):
        request = Request(environ)
        with self._lock:
            self.requests.append((dict(request.headers), request.get_data()))
        return Response(status=self.status)(environ, start_response)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
