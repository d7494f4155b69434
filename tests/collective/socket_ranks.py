"""Run one robust-transport rank per thread against a tracker (shared by the transport and auth tests)."""
import threading

from mxref.collective.transport import SocketLink


def run_ranks(world, tracker, fn, before=None, connect_timeout=None):
    """Each rank in a thread: optional ``before(link)`` (before joining), reconnect, ``fn(link)``.

    Returns ``(results by rank, links)``; a rank that raised or did not finish fails the caller.
    ``connect_timeout=None`` keeps SocketLink's default (``MXREF_COLLECTIVE_TIMEOUT``).
    """
    out, errors = [None] * world, []
    links = [SocketLink((tracker.host, tracker.port), r, world, timeout=20, secret=tracker.secret,
                        connect_timeout=connect_timeout) for r in range(world)]

    def body(rank):
        link = links[rank]
        try:
            if before is not None:
                before(link)
            link.reconnect()
            out[rank] = fn(link)
        except BaseException as exc:  # noqa: B036 - surfaced below
            errors.append(exc)
        finally:
            link._drop()
            link.listener.close()
    threads = [threading.Thread(target=body, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    assert not errors, errors
    return out, links
