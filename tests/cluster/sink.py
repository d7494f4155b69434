"""Bandwidth probe: ``sink.py listen ADDR PORT`` takes one connection, reads to EOF and answers one
byte; ``sink.py send ADDR PORT BYTES`` sends that many bytes, waits for the answer (so the time
covers delivery, not just the local socket buffer) and prints the seconds taken."""
import socket
import sys
import time


def listen(addr, port):
    with socket.create_server((addr, port)) as srv:
        srv.settimeout(60)
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(60)
            while conn.recv(1 << 20):
                pass
            conn.sendall(b"k")


def send(addr, port, nbytes):
    chunk = b"x" * (1 << 20)
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = socket.create_connection((addr, port), timeout=60)
            break
        except ConnectionRefusedError:          # the listener is still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    with conn:
        start = time.perf_counter()
        left = nbytes
        while left:
            left -= conn.send(chunk[:min(left, len(chunk))])
        conn.shutdown(socket.SHUT_WR)
        assert conn.recv(1) == b"k"
        print(f"{time.perf_counter() - start:.4f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "listen":
        listen(sys.argv[2], int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
