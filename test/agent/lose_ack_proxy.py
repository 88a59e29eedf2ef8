#!/usr/bin/env python3
"""A TCP proxy in front of PostgreSQL that loses the server's answer to the
Nth COMMIT it sees: the COMMIT reaches the server (so the transaction
commits), then both connections are closed before the answer gets back.
The client sees its commit fail although it succeeded, as it would when a
network breaks at the wrong moment.

usage: lose_ack_proxy.py LISTEN_PORT SERVER_PORT N
"""
import socket
import sys
import threading

listen_port, server_port, nth = (int(a) for a in sys.argv[1:4])
lock = threading.Lock()
commits = 0


def serve(client):
    server = socket.create_connection(("127.0.0.1", server_port))
    swallow = threading.Event()
    answered = threading.Event()

    def close_both():
        for s in (client, server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def upstream():
        global commits
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                if b"COMMIT" in data:
                    with lock:
                        commits += 1
                        lose = commits == nth
                    if lose:
                        swallow.set()
                        server.sendall(data)
                        # the server's answer means it committed; a fixed
                        # wait was too short on a loaded machine
                        answered.wait(60)
                        print("lost the answer to COMMIT #%d" % nth, flush=True)
                        close_both()
                        return
                server.sendall(data)
        except OSError:
            pass

    def downstream():
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                if not swallow.is_set():
                    client.sendall(data)
                else:
                    answered.set()
        except OSError:
            pass

    threading.Thread(target=upstream, daemon=True).start()
    threading.Thread(target=downstream, daemon=True).start()


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", listen_port))
listener.listen(16)
while True:
    conn, _ = listener.accept()
    serve(conn)
