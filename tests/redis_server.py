"""The tests' own Redis: a ``redis-server`` child process on a port of theirs, never the developer's Redis.

``make test`` installs ``redis-server`` when it is missing and it can (``scripts/apt.py``); when there
is still none, the few tests that need Redis are skipped, and pytest's summary says why.
"""
import shutil
import subprocess
import time

import pytest
import redis

from tests.ports import free_port

MISSING = ("redis-server is not installed (make test installs it with apt-get when it can): "
           "the tests that need Redis start their own and are skipped without it")


def require_redis_server():
    """Skip the calling test, saying why, when there is no ``redis-server`` on the PATH."""
    if shutil.which("redis-server") is None:
        pytest.skip(MISSING)


class RedisServer:
    """A throwaway ``redis-server`` on 127.0.0.1: nothing saved to disk; ``url`` names its database 0.

    ``stop()`` and ``start()`` take it down and up again on the same port.
    """

    def __init__(self, port=None):
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self, seconds=10):
        """Start the server and wait until it answers ``PING`` (raise after ``seconds``); return ``self``."""
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL)
        client = self.client()
        deadline = time.monotonic() + seconds
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.05)

    def client(self):
        """Return a redis-py client of this server's database 0."""
        return redis.Redis.from_url(self.url)

    def stop(self):
        self.process.terminate()
        self.process.wait(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
