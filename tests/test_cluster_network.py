"""``make test-cluster``'s own parts that can be checked in a second: the balancer and the fallback network.

The whole run (two hosts, one killed) is ``make test-cluster``, three times in ``.ci/run``.
"""
import socket
import threading

from scripts.cluster.network import Forwarder, Network
from tests.ports import free_port


def _server(reply):
    """A TCP server on 127.0.0.1 answering every connection with ``reply`` then closing; return its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            connection, _ = listener.accept()
            with connection:
                connection.recv(100)
                connection.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1]


def _ask(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(b"ping")
        return connection.recv(100)


def test_the_balancer_sends_each_connection_to_the_next_target():
    balancer = Forwarder(("127.0.0.1", free_port()), [("127.0.0.1", _server(b"a")), ("127.0.0.1", _server(b"b"))])
    balancer.start()
    try:
        assert [_ask(balancer.listen[1]) for _ in range(4)] == [b"a", b"b", b"a", b"b"]
    finally:
        balancer.stop()


def test_a_dead_target_closes_the_connection_and_the_next_one_goes_on():
    balancer = Forwarder(("127.0.0.1", free_port()), [("127.0.0.1", free_port()), ("127.0.0.1", _server(b"b"))])
    balancer.start()
    try:
        assert _ask(balancer.listen[1]) == b"", "no host behind it: the client sees the connection end"
        assert _ask(balancer.listen[1]) == b"b"
    finally:
        balancer.stop()


def test_the_loopback_fallback_runs_both_hosts_here_and_exposes_services_as_they_are():
    network = Network(loopback=True).start()
    try:
        assert network.mode == "loopback" and network.hosts == ["127.0.0.11", "127.0.0.12"]
        assert network.prefix(0) == [] and network.expose(5432) == ("127.0.0.1", 5432)
    finally:
        network.stop()
