"""Free TCP ports for servers the tests and the bench start.

It imports nothing from the tests, so any test module, fixture or script can use it.
"""
import socket


def free_port(host="127.0.0.1"):
    """Return a TCP port on ``host`` that nothing listens on (bound by the OS, then released)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
