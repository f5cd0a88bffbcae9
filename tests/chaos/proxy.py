"""A TCP proxy on loopback that can blackhole the connections it carries (fault 5).

    proxy = Proxy(target_port).start()      # listens on 127.0.0.1:proxy.port
    proxy.blackhole()                       # every connection open now goes silent

A blackholed connection stays open and its bytes are read (so the kernel keeps
acknowledging them, and TCP keepalive probes too) but nothing is forwarded, either
way: what a hung pooler or a middlebox that drops one flow looks like to a client.
Connections opened after the blackhole are carried normally (a reconnect works).
"""

from __future__ import annotations

import contextlib
import socket
import threading


class _Pair:
    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.silent = threading.Event()

    def pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if not self.silent.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            if not self.silent.is_set():
                for s in (self.client, self.server):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)


class Proxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.pairs: list[_Pair] = []
        self.lock = threading.Lock()

    def start(self) -> Proxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            pair = _Pair(client, server)
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=pair.pump, args=(client, server), daemon=True).start()
            threading.Thread(target=pair.pump, args=(server, client), daemon=True).start()

    def blackhole(self) -> int:
        """Silence every connection open now; how many."""
        with self.lock:
            for p in self.pairs:
                p.silent.set()
            n = len(self.pairs)
            self.pairs = []
        return n

    def close(self) -> None:
        self.listener.close()
