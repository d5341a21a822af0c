"""The cluster's network: two hosts in network namespaces of their own, or two loopback addresses.

With ``ip netns`` (root, Linux): a bridge on a private /24 of the run's own (``10.235.<n>.0/24``:
the machine's side ``.1``, host A ``.11``, host B ``.12``) and a veth pair per namespace. The
machine's shared services (PostgreSQL, Redis, the emulator, the mail and webhook sinks) listen on
127.0.0.1, which a namespace cannot reach: each is exposed on the bridge address by a TCP
forwarder, so the hosts reach them as remote hosts would, over an interface. Where ``ip netns``
is refused, the hosts are two process groups on 127.0.0.11 and 127.0.0.12 and the services are
reached on 127.0.0.1 directly; ``mode`` says which, and the run prints it.
"""
import asyncio
import itertools
import os
import subprocess
import threading


def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


class Forwarder:
    """TCP forwarding from ``listen`` (host, port) to ``targets`` in turn, one per connection.

    With two targets it is a load balancer without health checks: a connection whose target does
    not answer is closed at once, and the client's own retry (Stripe's, for webhooks) goes on.
    """

    def __init__(self, listen, targets):
        self.listen, self._targets = listen, itertools.cycle(targets)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"forward-{listen[1]}", daemon=True)

    def start(self):
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, *self.listen), self.loop).result(10)
        return self

    def stop(self):
        """Close the listener and every connection still open, then the loop."""
        asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    async def _shutdown(self):
        self.server.close()
        pipes = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in pipes:
            task.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)

    async def _handle(self, reader, writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*next(self._targets))
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer))

    @staticmethod
    async def _pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()


class Network:
    """``hosts``: the two hosts' addresses; ``prefix(i)``: the command prefix that runs in host ``i``;
    ``expose(port)``: the (address, port) at which the hosts reach a service on 127.0.0.1:``port``."""

    def __init__(self, loopback=False):
        self.mode, self.forwarders, self.reason = "netns", [], ""
        self.loopback = loopback
        self.tag = f"cl{os.getpid() % 100000}"
        subnet = f"10.235.{os.getpid() % 250 + 1}"
        self.machine, self.hosts = f"{subnet}.1", [f"{subnet}.11", f"{subnet}.12"]
        self.namespaces = [f"{self.tag}-a", f"{self.tag}-b"]

    def start(self):
        """Make the namespaces and the bridge, or fall back to loopback addresses (``mode``)."""
        made = _ip("netns", "add", self.namespaces[0]) if not self.loopback else None
        if made is None or made.returncode != 0:
            self.mode = "loopback"
            self.reason = "--loopback" if made is None else made.stderr.strip() or "ip netns add failed"
            self.machine, self.hosts, self.namespaces = "127.0.0.1", ["127.0.0.11", "127.0.0.12"], []
            return self
        bridge = f"{self.tag}br"
        steps = [("netns", "add", self.namespaces[1]), ("link", "add", bridge, "type", "bridge"),
                 ("addr", "add", f"{self.machine}/24", "dev", bridge), ("link", "set", bridge, "up")]
        for index, namespace in enumerate(self.namespaces):
            outside, inside = f"{self.tag}{'ab'[index]}0", f"{self.tag}{'ab'[index]}1"
            steps += [("link", "add", outside, "type", "veth", "peer", "name", inside),
                      ("link", "set", outside, "master", bridge), ("link", "set", outside, "up"),
                      ("link", "set", inside, "netns", namespace),
                      ("-n", namespace, "addr", "add", f"{self.hosts[index]}/24", "dev", inside),
                      ("-n", namespace, "link", "set", inside, "up"), ("-n", namespace, "link", "set", "lo", "up")]
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                self.stop()
                raise RuntimeError(f"ip {' '.join(step)}: {done.stderr.strip()}")
        return self

    def prefix(self, index):
        return ["ip", "netns", "exec", self.namespaces[index]] if self.mode == "netns" else []

    def expose(self, port):
        if self.mode != "netns":
            return "127.0.0.1", port
        self.forwarders.append(Forwarder((self.machine, port), [("127.0.0.1", port)]).start())
        return self.machine, port

    def stop(self):
        for forwarder in self.forwarders:
            forwarder.stop()
        if self.mode == "netns":
            for namespace in self.namespaces:
                _ip("netns", "del", namespace)
            _ip("link", "del", f"{self.tag}br")
