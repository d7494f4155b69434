"""Fuzz the file loaders: seeded mutations of MXNet-written files, each loaded under a memory limit.

Run: ``.venv/bin/python benchmarks/fuzz_loaders.py --variants 5000`` (about ten seconds). For
each format (``params``: ``mx.nd.load`` on a dense dict file and a sparse list file; ``symbol``:
``mx.sym.load`` on a ``-symbol.json``; ``rec``: ``MXRecordIO.read`` to the end of a ``.rec``, each
record also through ``recordio.unpack``; ``states``: ``Updater.set_states`` on an optimizer-state
file, without the pickle opt-in) it writes ``--variants`` mutated copies of a fixture and
loads each. The only allowed outcomes are success and ``MXNetError``; anything else (a bare ``ValueError``, a
``MemoryError`` from an allocation the address-space limit refused, ...) is printed with the
variant's seed, which ``--only FORMAT:SEED`` replays. Prints counts per format and outcome; exits 1
when any variant had another outcome. ``tests/test_fuzz_loaders.py`` runs a small fixed set of it.

The process limits its own address space (``RLIMIT_AS``) to what it uses after import plus
``--headroom-mb``, so a loader that tries to allocate from a size it did not check fails with
``MemoryError`` instead of succeeding lazily. Mutations are from ``random.Random(seed)`` per
variant, so a run is the same on every machine.
"""
from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import random
import resource
import struct
import sys
import tempfile

# Before mxref is imported: the naive engine starts no worker threads (whose stacks would count
# against the address-space limit). Sparse arrays load sparse, so no declared shape allocates.
os.environ.setdefault("MXNET_ENGINE_TYPE", "NaiveEngine")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mxref as mx  # noqa: E402
from mxref import recordio  # noqa: E402
from mxref.base import MXNetError  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
SOURCES = {
    "params": [os.path.join(FIXTURES, "ndarray", "mxnet_dict.params"),
               os.path.join(FIXTURES, "ndarray", "mxnet_sparse.nd")],
    "symbol": [os.path.join(FIXTURES, "module", "mxnet_bn_mlp-symbol.json")],
    "rec": [os.path.join(FIXTURES, "io", "mxnet191.rec")],
    "states": [],   # made in memory by states_source()
}
INTERESTING = [0, 1, 2, 3, 7, 31, 32, 33, 255, 0x112, 2 ** 15, 2 ** 16, 2 ** 29 - 1, 2 ** 31 - 1, 2 ** 31,
               2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1, -1, -2, -(2 ** 31), -(2 ** 63)]


# ---------------------------------------------------------------------------------------------
# Where the integer fields of a valid NDArray file are (for field-targeted edits)
# ---------------------------------------------------------------------------------------------

def ndarray_fields(blob: bytes):
    """``(offset, struct format)`` of every header integer in a V2 NDArray file (dense or sparse)."""
    fields, pos = [], 0

    def take(fmt):
        nonlocal pos
        fields.append((pos, fmt))
        (value,) = struct.unpack_from(fmt, blob, pos)
        pos += struct.calcsize(fmt)
        return value

    def shape():
        ndim = take("<i")
        dims = [take("<q") for _ in range(max(ndim, 0))]
        return dims

    take("<Q")
    take("<Q")
    for _ in range(take("<Q")):
        take("<I")
        stype = take("<i")
        if stype:
            shape()
        dims = shape()
        take("<i")
        take("<i")
        flag = take("<i")
        item = {0: 4, 1: 8, 2: 2, 3: 1, 4: 4, 5: 1, 6: 8, 7: 1}[flag]
        if stype:
            aux = [(take("<i"), shape()) for _ in range(1 if stype == 1 else 2)]
            count = aux[0][1][0] * _prod(dims[1:]) if stype == 1 else aux[1][1][0]
            pos += count * item + sum(_prod(s) * 8 for _, s in aux)
        else:
            pos += _prod(dims) * item
    for _ in range(take("<Q")):
        length = take("<Q")   # NOTE: not ``pos += take(...)``, which adds to the old pos
        pos += length
    return fields


def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


# ---------------------------------------------------------------------------------------------
# Mutators
# ---------------------------------------------------------------------------------------------

def mutate_bytes(blob: bytes, rng: random.Random, fields=()) -> bytes:
    """One to three edits: bit flips, truncation, inserted or deleted bytes, an integer field set."""
    data = bytearray(blob)
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["flip", "truncate", "insert", "delete", "field", "field", "word"])
        if not data:
            data += bytes([rng.randrange(256)])
        if kind == "flip":
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
        elif kind == "truncate":
            del data[rng.randrange(len(data)):]
        elif kind == "insert":
            i = rng.randrange(len(data) + 1)
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 8, 16])))
        elif kind == "delete":
            i = rng.randrange(len(data))
            del data[i:i + rng.choice([1, 4, 8, 16])]
        elif kind == "field" and fields:
            offset, fmt = rng.choice(fields)
            if offset + struct.calcsize(fmt) <= len(data):
                data[offset:offset + struct.calcsize(fmt)] = _pack_int(fmt, rng.choice(INTERESTING))
        else:   # an aligned 32-bit word set to an interesting value
            i = rng.randrange(0, max(len(data) - 3, 1), 4)
            data[i:i + 4] = _pack_int("<i", rng.choice(INTERESTING))
    return bytes(data)


def _pack_int(fmt: str, value: int) -> bytes:
    bits = struct.calcsize(fmt) * 8
    return struct.pack(fmt.lower(), (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)))


def _odd_value(rng: random.Random):
    return rng.choice([None, True, -1, 0, 7, 10 ** 30, 1.5, "", "x", "-1", "(2,-3)", "9" * 5000,
                       [], [0], [[0, 0, 0]], [-1, 0], {}, {"a": "b"}, [[99, 0, 0]], ["int", "q"],
                       "(" * 2000, "1e999", "\ud800", "x" * (2 << 20)])


def mutate_json(text: str, rng: random.Random) -> bytes:
    """Structure edits of a graph file (node fields, entries, heads, version), or a byte edit."""
    if rng.random() < 0.2:
        return mutate_bytes(text.encode("utf-8"), rng)
    doc = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        try:
            _edit_json(doc, rng)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError):
            pass   # an earlier edit replaced what this one would change: the variant stands as is
    return json.dumps(doc).encode("utf-8", "surrogatepass")


def _edit_json(doc: dict, rng: random.Random) -> None:
    """One structural edit of the graph ``doc``, in place."""
    nodes = doc.get("nodes") if isinstance(doc.get("nodes"), list) else None
    kind = rng.choice(["node_field", "node_field", "drop_field", "entry", "entry", "deps",
                       "heads", "version", "top", "reorder"])
    if kind in ("node_field", "drop_field", "entry", "deps") and nodes:
        node = rng.choice(nodes)
        if not isinstance(node, dict):
            return
        if kind == "node_field":
            key = rng.choice(["name", "op", "attrs", "inputs", "param", "attr", "control_deps"])
            node[key] = _odd_value(rng)
        elif kind == "drop_field" and node:
            node.pop(rng.choice(sorted(node)))
        elif kind == "entry" and isinstance(node.get("inputs"), list) and node["inputs"]:
            entry = rng.choice(node["inputs"])
            if isinstance(entry, list) and entry:
                entry[rng.randrange(len(entry))] = rng.choice(INTERESTING + ["0", 1.0, None])
        elif kind == "deps":
            node["control_deps"] = [rng.choice(INTERESTING[:12] + [-1, "0", None])]
        if kind == "node_field" and isinstance(node.get("attrs"), dict) and node["attrs"]:
            node["attrs"][rng.choice(sorted(node["attrs"]))] = _odd_value(rng)
    elif kind == "heads":
        doc["heads"] = rng.choice([[], [[0, 5, 0]], [[len(nodes or []), 0, 0]], "x", [[0]], [None]])
    elif kind == "version":
        doc.setdefault("attrs", {})["mxnet_version"] = _odd_value(rng)
    elif kind == "top":
        doc[rng.choice(["nodes", "heads", "attrs", "arg_nodes"])] = _odd_value(rng)
    elif kind == "reorder" and nodes:
        rng.shuffle(nodes)


def rec_fields(blob: bytes):
    """Offsets of every record header word (magic, lrec) in a valid ``.rec`` file."""
    fields, pos = [], 0
    while pos + 8 <= len(blob):
        fields += [(pos, "<I"), (pos + 4, "<I")]
        (lrec,) = struct.unpack_from("<I", blob, pos + 4)
        length = lrec & ((1 << 29) - 1)
        pos += 8 + (length + 3) // 4 * 4
    return fields


def mutate_rec(blob: bytes, rng: random.Random, fields) -> bytes:
    if rng.random() < 0.5:
        return mutate_bytes(blob, rng, fields)
    data = bytearray(blob)
    offset = rng.choice([o for o, _ in fields if o % 8 == 4] or [0])
    (lrec,) = struct.unpack_from("<I", data, offset)
    cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
    if rng.random() < 0.5:
        cflag = rng.randrange(8)
    else:
        length = rng.choice([0, 1, length + 4, length - 1, (1 << 29) - 1, rng.randrange(1 << 16)])
    struct.pack_into("<I", data, offset, (cflag << 29) | (length % (1 << 29)))
    return bytes(data)


# ---------------------------------------------------------------------------------------------
# Loading one variant
# ---------------------------------------------------------------------------------------------

def load_params(path):
    mx.nd.load(path)


def load_symbol(path):
    mx.sym.load(path)


def load_rec(path):
    rec = recordio.MXRecordIO(path, "r")
    try:
        for _ in range(10000):
            item = rec.read()
            if item is None:
                break
            try:   # the fixture mixes image records with plain payloads: unpack each as a header
                recordio.unpack(item)
            except MXNetError:
                pass
    finally:
        rec.close()


def load_states(path):
    with open(path, "rb") as f:
        mx.optimizer.get_updater(mx.optimizer.SGD()).set_states(f.read(), allow_pickle=False,
                                                                  source=path)


@functools.lru_cache(maxsize=1)
def states_source() -> bytes:
    """A valid optimizer-state file: Adam (multi-precision) with a scheduler, after two steps."""
    optimizer = mx.optimizer.Adam(multi_precision=True, learning_rate=0.01,
                                  lr_scheduler=mx.lr_scheduler.FactorScheduler(1, 0.5, base_lr=0.01))
    updater = mx.optimizer.get_updater(optimizer)
    weights = [mx.nd.ones((2, 3), dtype="float16"), mx.nd.ones((4,))]
    for _ in range(2):
        for i, w in enumerate(weights):
            updater(i, mx.nd.ones(w.shape, dtype=w.dtype), w)
    return updater.get_states(dump_optimizer=True)


def mutate_states(blob: bytes, rng: random.Random) -> bytes:
    """Byte edits of the whole file, or structure edits of its JSON entry (re-saved validly)."""
    if rng.random() < 0.4:
        return mutate_bytes(blob, rng, ndarray_fields(blob))
    from mxref.optimizer import states_format
    arrays = mx.nd.load_frombuffer(blob)
    text = arrays[states_format.HEADER_KEY].asnumpy().tobytes().decode()
    doc = json.loads(text)
    nodes = []

    def collect(v):
        if isinstance(v, dict):
            nodes.append(v)
            for x in v.values():
                collect(x)
        elif isinstance(v, list):
            nodes.append(v)
            for x in v:
                collect(x)
    collect(doc)
    for _ in range(rng.randint(1, 3)):
        target = rng.choice(nodes)
        if isinstance(target, dict) and target:
            key = rng.choice(sorted(target))
            target[key] = rng.choice([_odd_value(rng), {"t": rng.choice(["nd", "np", "ref", "obj", "scalar",
                                                                         "dict", "x"])},
                                      {"t": "scalar", "dtype": rng.choice(["V99999999999", "O", "<f8", "S9"]),
                                       "v": 1}])
        elif isinstance(target, list) and target:
            target[rng.randrange(len(target))] = _odd_value(rng)
    raw = json.dumps(doc).encode("utf-8", "surrogatepass")
    arrays[states_format.HEADER_KEY] = mx.nd.array(list(raw), dtype="uint8")
    return mx.nd.save_tobuffer(arrays)


LOADERS = {"params": load_params, "symbol": load_symbol, "rec": load_rec, "states": load_states}


def variant(fmt: str, seed: int) -> bytes:
    """The bytes of variant ``seed`` of format ``fmt`` (the same on every run and machine)."""
    rng = random.Random(f"{fmt}:{seed}")
    if fmt == "states":
        return mutate_states(states_source(), rng)
    source = SOURCES[fmt][seed % len(SOURCES[fmt])]
    blob = open(source, "rb").read()
    if fmt == "params":
        return mutate_bytes(blob, rng, ndarray_fields(blob))
    if fmt == "symbol":
        return mutate_json(blob.decode("utf-8"), rng)
    return mutate_rec(blob, rng, rec_fields(blob))


def run_one(fmt: str, seed: int, workdir: str) -> str:
    """``'ok'``, ``'MXNetError'`` or ``'<Type>: message'`` for any other exception."""
    path = os.path.join(workdir, f"v.{fmt}")
    with open(path, "wb") as f:
        f.write(variant(fmt, seed))
    try:
        LOADERS[fmt](path)
    except MXNetError:
        return "MXNetError"
    except Exception as exc:   # what the fuzzer looks for: anything that is not an MXNetError
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return "ok"


def limit_address_space(headroom_mb: int) -> int:
    """Cap this process's address space at its current size plus ``headroom_mb``; returns the cap."""
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    cap = vm + (headroom_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    return cap


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=1000, help="variants per format")
    parser.add_argument("--seed", type=int, default=0, help="first variant seed")
    parser.add_argument("--formats", default="params,symbol,rec,states")
    parser.add_argument("--headroom-mb", type=int, default=512)
    parser.add_argument("--only", help="replay one variant, FORMAT:SEED")
    parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    args = parser.parse_args(argv)
    cap = limit_address_space(args.headroom_mb) if args.headroom_mb > 0 else 0
    if args.only:
        fmt, seed = args.only.split(":")
        with tempfile.TemporaryDirectory() as workdir:
            print(run_one(fmt, int(seed), workdir))
        return 0
    counts = {fmt: collections.Counter() for fmt in args.formats.split(",")}
    bad = []
    with tempfile.TemporaryDirectory() as workdir:
        for fmt in counts:
            for seed in range(args.seed, args.seed + args.variants):
                outcome = run_one(fmt, seed, workdir)
                counts[fmt][outcome if outcome in ("ok", "MXNetError") else "other"] += 1
                if outcome not in ("ok", "MXNetError"):
                    bad.append(f"{fmt}:{seed} {outcome}")
    if args.json:
        print(json.dumps({"counts": {f: dict(c) for f, c in counts.items()}, "bad": bad}))
    else:
        print(f"address-space limit {cap >> 20} MiB, seeds {args.seed}..{args.seed + args.variants - 1}")
        for fmt, c in counts.items():
            print(f"  {fmt:7s} ok {c['ok']:6d}  MXNetError {c['MXNetError']:6d}  other {c['other']:4d}")
        for line in bad:
            print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
