#!/usr/bin/env python3
"""Writes prefix_hash.txt: chained prefix hashes computed by the `xxhash` Python package (pip install
xxhash), the definition the router and keel serve's cache feed share (src/cache/prefix_hash.h):

    h(empty) = 0;  h(p + [t]) = xxh3_64(int32 little-endian bytes of t, seed = h(p))

One sequence per line: `<n> t_1 .. t_n h_1 .. h_n` with h_i the hash of the first i tokens in hex.
keel's extend_prefix_hash must agree (tests/unit/cache/prefix_hash_test.cc).
Run: python3 tests/golden/cache/gen_prefix_hash.py
"""
import os
import random
import struct

import xxhash

HERE = os.path.dirname(os.path.abspath(__file__))


def chain(tokens):
    h, out = 0, []
    for t in tokens:
        h = xxhash.xxh3_64_intdigest(struct.pack("<i", t), seed=h)
        out.append(h)
    return out


def main():
    rng = random.Random(20240613)
    seqs = [
        [0],
        [1],
        [2147483647],
        [-1],  # not a valid token, but the byte definition covers it
        [1, 2, 3, 4, 5, 6, 7, 8],
        [49152, 1, 49151, 0, 0, 0, 7],
        [rng.randrange(0, 152064) for _ in range(64)],
        [rng.randrange(0, 32000) for _ in range(300)],
    ]
    with open(os.path.join(HERE, "prefix_hash.txt"), "w") as f:
        for s in seqs:
            f.write(" ".join([str(len(s))] + [str(t) for t in s] + [f"{h:016x}" for h in chain(s)]) + "\n")


if __name__ == "__main__":
    main()
