#!/usr/bin/python3
"""Pads a candump -l log with filler frames up to a target bus load, as on a busy car bus:
the load test of issue 8 replays the result in real time through the daemon.

usage: tools/bus_load.py IN.log OUT.log [frames_per_s]   (default 8000, a saturated 1 Mbit/s
classic CAN bus: about 125 bits per 8-byte frame with stuffing)

The filler frames use ids the daemon's DBC does not know (0x6A0-0x6FF) and some of the ids
it knows but does not map, so both the unknown-id counter and the decoder's fast rejection
are exercised. Timestamps interleave; the output is in time order.
"""
import random
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    target = float(argv[3]) if len(argv) > 3 else 8000.0
    lines = []
    with open(argv[1]) as f:
        for n, line in enumerate(f, 1):
            if not line.startswith("("):
                continue
            t = float(line[1:line.index(")")])
            iface = line.split()[1]
            lines.append((t, line.rstrip("\n")))
    if not lines:
        print(f"{argv[1]}: no frames", file=sys.stderr)
        return 2
    t0, t1 = lines[0][0], lines[-1][0]
    have = len(lines) / max(t1 - t0, 1e-9)
    extra = max(0.0, target - have)
    rng = random.Random(1)
    out = list(lines)
    n_extra = int(extra * (t1 - t0))
    for i in range(n_extra):
        t = t0 + (t1 - t0) * (i + rng.random()) / n_extra
        can_id = 0x6A0 + rng.randrange(0x60)
        data = "".join(f"{rng.randrange(256):02X}" for _ in range(8))
        out.append((t, f"({t:.6f}) {iface} {can_id:03X}#{data}"))
    out.sort(key=lambda x: x[0])
    with open(argv[2], "w") as f:
        for _, l in out:
            f.write(l + "\n")
    print(f"{argv[2]}: {len(out)} frames over {t1 - t0:.1f} s = {len(out) / (t1 - t0):.0f} frames/s "
          f"({len(lines)} sensor frames, {n_extra} filler)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
