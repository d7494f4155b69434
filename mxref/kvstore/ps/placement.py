"""Which server holds which key: greedy bin-packing by size, big arrays split across all servers.

MXNet hashes a key to ``(key * 9973) % S``, so a few mid-size tensors can land on one server and
make it the bottleneck (complaint 5 in ``docs/mxnet-complaints.md``). Here each ``init`` call's keys
are sorted by size, largest first, and each goes to the server with the fewest bytes so far
(ties: the lowest index), as MXNet's ``CommDevice`` places merge buffers. An array of at least
``MXNET_KVSTORE_BIGARRAY_BOUND`` elements (default 1e6) is cut into ``S`` contiguous parts of the
flattened array, part ``i`` being ``[round(n*i/S), round(n*(i+1)/S))`` on server ``i``.

Every worker calls ``init`` with the same keys in the same order, so every worker computes the
same table without talking to anyone; ``kv.placement`` shows it.
"""
from __future__ import annotations

from typing import Dict, Hashable, List, NamedTuple, Optional, Sequence, Tuple

from ...base import MXNetError, env_int

__all__ = ["Part", "Placement", "bigarray_bound"]


class Part(NamedTuple):
    """Elements ``[lo, hi)`` of a key's flattened array, held by ``server``."""

    server: int
    lo: int
    hi: int


def bigarray_bound() -> int:
    """``MXNET_KVSTORE_BIGARRAY_BOUND``: element count from which an array is split."""
    return env_int("MXNET_KVSTORE_BIGARRAY_BOUND", 1000 * 1000)


class Placement:
    """The key -> parts table of one store, filled one ``init`` call at a time.

    Parameters
    ----------
    num_servers : int
        ``S``.
    bound : int, optional
        Split arrays of at least this many elements (default ``bigarray_bound()``).
    """

    def __init__(self, num_servers: int, bound: Optional[int] = None):
        self.num_servers = num_servers
        self.bound = bigarray_bound() if bound is None else bound
        self._parts: Dict[Hashable, List[Part]] = {}
        self._load = [0] * num_servers        # bytes assigned to each server

    def assign(self, keys: Sequence[Tuple[Hashable, int, int]]) -> None:
        """Place new keys given as ``(key, num_elements, itemsize)``; keys already placed are kept."""
        new = [k for k in keys if k[0] not in self._parts]
        # NOTE: a stable sort on size alone; equal sizes keep the caller's order, which every
        # worker shares, so every worker builds the same table.
        for key, size, itemsize in sorted(new, key=lambda k: -k[1] * k[2]):
            if size < 0:
                raise MXNetError(f"kvstore placement: key {key!r} has a negative size {size}")
            if size >= self.bound and self.num_servers > 1:
                parts = self._split(size)
            else:
                server = min(range(self.num_servers), key=lambda s: (self._load[s], s))
                parts = [Part(server, 0, size)]
            for p in parts:
                self._load[p.server] += (p.hi - p.lo) * itemsize
            self._parts[key] = parts

    def _split(self, size: int) -> List[Part]:
        s = self.num_servers
        bounds = [round(size * i / s) for i in range(s + 1)]
        return [Part(i, bounds[i], bounds[i + 1]) for i in range(s) if bounds[i + 1] > bounds[i]]

    def parts(self, key: Hashable) -> List[Part]:
        """The parts of ``key``, in element order."""
        try:
            return self._parts[key]
        except KeyError:
            raise MXNetError(f"kvstore placement: key {key!r} has not been inited") from None

    def __contains__(self, key: Hashable) -> bool:
        return key in self._parts

    @property
    def loads(self) -> List[int]:
        """Bytes held by each server."""
        return list(self._load)

    def table(self) -> Dict[Hashable, List[Part]]:
        """A copy of the whole assignment: ``{key: [Part(server, lo, hi), ...]}``."""
        return {k: list(v) for k, v in self._parts.items()}
