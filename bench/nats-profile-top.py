#!/usr/bin/env python3
"""Top functions of a Go pprof CPU profile (nats-server's `prof_port`, /debug/pprof/profile),
without Go's tools: the profile is gzipped protobuf (github.com/google/pprof, profile.proto), read
here with a minimal decoder. Prints the self and the cumulative share of the samples.

    curl -so nats.pprof 'http://127.0.0.1:6061/debug/pprof/profile?seconds=20'
    python3 bench/nats-profile-top.py nats.pprof [rows]
"""
import gzip
import sys
from collections import Counter


def varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def fields(buf):
    """Yields (field number, wire type, value) of one message; length-delimited values as bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            size, i = varint(buf, i)
            value = buf[i:i + size]
            i += size
        elif wire == 1:
            value = buf[i:i + 8]
            i += 8
        elif wire == 5:
            value = buf[i:i + 4]
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        yield num, wire, value


def packed(wire, value):
    """A repeated integer field: packed (bytes) or one value."""
    if wire != 2:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    strings, samples, locations, functions = [], [], {}, {}
    for num, wire, value in fields(data):
        if num == 6:
            strings.append(value.decode("utf-8", "replace"))
        elif num == 2:
            locs, vals = [], []
            for n, w, v in fields(value):
                if n == 1:
                    locs += packed(w, v)
                elif n == 2:
                    vals += packed(w, v)
            samples.append((locs, vals))
        elif num == 4:
            lid, funcs = 0, []
            for n, w, v in fields(value):
                if n == 1:
                    lid = v
                elif n == 4:
                    fid = next((v2 for n2, w2, v2 in fields(v) if n2 == 1), 0)
                    funcs.append(fid)
            locations[lid] = funcs
        elif num == 5:
            fid = name = 0
            for n, w, v in fields(value):
                if n == 1:
                    fid = v
                elif n == 2:
                    name = v
            functions[fid] = name
    # Sample value index 1 is CPU nanoseconds in Go's CPU profiles (0 is the sample count).
    total = 0
    self_, cum = Counter(), Counter()
    for locs, vals in samples:
        weight = vals[-1] if vals else 1
        total += weight
        names = [strings[functions[f]] for loc in locs for f in locations.get(loc, [])]
        if names:
            self_[names[0]] += weight
        for name in set(names):
            cum[name] += weight
    print(f"{total / 1e9:.2f} s of CPU sampled")
    print("self %  cum %  function")
    for name, weight in self_.most_common(rows):
        print(f"{100 * weight / total:6.1f} {100 * cum[name] / total:6.1f}  {name}")
    print("\nby cumulative share:")
    for name, weight in cum.most_common(rows):
        print(f"{100 * weight / total:6.1f}  {name}")


if __name__ == "__main__":
    main()
