#!/usr/bin/python3
"""Writes a candump log with faults injected into a clean one, for the fault catalogue
(tests/faults/) and for trying the daemon by hand.

    tools/inject_faults.py IN.log OUT.log --dbc config/can/vehicle.dbc FAULT [FAULT ...]

Times are seconds from the log's first frame. Signals are named Message.Signal as in the DBC.
Faults (applied in order):
  first-fix:E,N              the first GNSS fix moved E m east and N m north (a multipath fix
                             at start-up); the rest untouched
  glitch:SIG:VALUE:T0:DUR    SIG set to VALUE ("max", "min" for the DBC range, or a number)
                             in every frame from T0 for DUR seconds
  freeze:SIG:T0:DUR          SIG held at its value at T0 for DUR seconds (a frozen counter)
  offset:SIG:VALUE:T0:DUR    VALUE added to SIG from T0 for DUR seconds (a sensor's bias; DUR
                             "inf" for the rest of the log)
  nan:SIG:T0:DUR             a float SIG set to NaN (inf: to +Inf) over [T0, T0 + DUR)
  inf:SIG:T0:DUR
  drop:MSG:T0:DUR            no frame of message MSG over [T0, T0 + DUR) (a sensor that stops)
  jump:T0:DT                 every frame from T0 on stamped DT seconds later (DT < 0: earlier)
  stamp:T0:DT                only the first frame at or after T0 stamped DT seconds later

Decoding and encoding use Debian's python3-canmatrix, so the faulty frames are what a real
node with that DBC would send.
"""
import argparse
import decimal
import math
import re
import sys

import canmatrix
import canmatrix.formats

LINE = re.compile(r"^\((\d+\.\d+)\)\s+(\S+)\s+([0-9A-Fa-f]+)#([0-9A-Fa-f]*)\s*$")
# WGS84 radii of curvature, enough for offsets of metres to kilometres
A, F = 6378137.0, 1 / 298.257223563
E2 = F * (2 - F)


def offset_latlon(lat, lon, east, north):
    s = math.sin(math.radians(lat))
    w = math.sqrt(1 - E2 * s * s)
    m = A * (1 - E2) / w**3  # meridian
    n = A / w  # prime vertical
    return lat + math.degrees(north / m), lon + math.degrees(east / (n * math.cos(math.radians(lat))))


class Log:
    def __init__(self, path):
        self.frames = []  # [t, iface, id, data(bytes)]
        with open(path) as f:
            for ln in f:
                m = LINE.match(ln)
                if not m:
                    raise SystemExit(f"{path}: not a candump -l line: {ln.strip()!r}")
                self.frames.append([float(m.group(1)), m.group(2), int(m.group(3), 16), bytes.fromhex(m.group(4))])
        if not self.frames:
            raise SystemExit(f"{path}: no frame")
        self.t0 = self.frames[0][0]

    def write(self, path):
        with open(path, "w") as f:
            for t, iface, fid, data in self.frames:
                f.write(f"({t:.6f}) {iface} {fid:03X}#{data.hex().upper()}\n")


class Dbc:
    def __init__(self, path):
        self.db = canmatrix.formats.loadp_flat(path)

    def frame(self, name):
        fr = self.db.frame_by_name(name)
        if fr is None:
            raise SystemExit(f"no message {name!r} in the DBC")
        return fr

    def signal(self, qualified):
        msg, sig = qualified.split(".")
        fr = self.frame(msg)
        s = fr.signal_by_name(sig)
        if s is None:
            raise SystemExit(f"no signal {qualified!r} in the DBC")
        return fr, s

    @staticmethod
    def raw_values(fr, data):
        return {k: v.raw_value for k, v in fr.decode(data).items()}

    @staticmethod
    def phys(s, raw):
        return float(raw) if s.is_float else float(s.raw2phys(raw))

    @staticmethod
    def raw(s, phys):
        return phys if s.is_float else s.phys2raw(decimal.Decimal(repr(phys)))


def frame_id(fr):
    return fr.arbitration_id.id


def edit_signal(log, dbc, qualified, t_from, t_to, value_of):
    fr, s = dbc.signal(qualified)
    n = 0
    for f in log.frames:
        if f[2] != frame_id(fr) or not (t_from <= f[0] - log.t0 < t_to):
            continue
        vals = Dbc.raw_values(fr, f[3])  # canmatrix encodes raw values
        vals[s.name] = Dbc.raw(s, value_of(Dbc.phys(s, vals[s.name])))
        f[3] = bytes(fr.encode(vals))
        n += 1
    if n == 0:
        raise SystemExit(f"{qualified}: no frame in [{t_from}, {t_to}) s")
    return n


def apply(log, dbc, spec):
    kind, _, rest = spec.partition(":")
    a = rest.split(":") if rest else []
    if kind == "first-fix":
        east, north = (float(x) for x in a[0].split(","))
        lat_fr, lat_s = dbc.signal("GNSS_Latitude.Latitude")
        lon_fr, lon_s = dbc.signal("GNSS_Longitude.Longitude")
        first = next(f[0] for f in log.frames if f[2] == frame_id(lat_fr))
        lat = next(Dbc.raw_values(lat_fr, f[3])["Latitude"] for f in log.frames if f[2] == frame_id(lat_fr))
        lon = next(Dbc.raw_values(lon_fr, f[3])["Longitude"] for f in log.frames if f[2] == frame_id(lon_fr))
        lat2, lon2 = offset_latlon(lat, lon, east, north)
        t_rel = first - log.t0
        edit_signal(log, dbc, "GNSS_Latitude.Latitude", t_rel, t_rel + 1e-7, lambda v: lat2)
        edit_signal(log, dbc, "GNSS_Longitude.Longitude", t_rel, t_rel + 1e-7, lambda v: lon2)
    elif kind == "glitch":
        sig, value, t0, dur = a[0], a[1], float(a[2]), float(a[3])
        _, s = dbc.signal(sig)
        target = {"max": float(s.max), "min": float(s.min)}.get(value)
        target = float(value) if target is None else target
        edit_signal(log, dbc, sig, t0, t0 + dur, lambda v: target)
    elif kind == "freeze":
        sig, t0, dur = a[0], float(a[1]), float(a[2])
        held = []
        edit_signal(log, dbc, sig, t0, t0 + dur, lambda v: held[0] if held else held.append(v) or v)
    elif kind == "offset":
        sig, value, t0, dur = a[0], float(a[1]), float(a[2]), float(a[3])
        edit_signal(log, dbc, sig, t0, t0 + dur, lambda v: v + value)
    elif kind in ("nan", "inf"):
        sig, t0, dur = a[0], float(a[1]), float(a[2])
        _, s = dbc.signal(sig)
        if not s.is_float:
            raise SystemExit(f"{sig}: not a float signal, it cannot carry {kind}")
        bad = float("nan") if kind == "nan" else float("inf")
        edit_signal(log, dbc, sig, t0, t0 + dur, lambda v: bad)
    elif kind == "drop":
        fr, t0, dur = dbc.frame(a[0]), float(a[1]), float(a[2])
        log.frames = [f for f in log.frames if not (f[2] == frame_id(fr) and t0 <= f[0] - log.t0 < t0 + dur)]
    elif kind == "jump":
        t0, dt = float(a[0]), float(a[1])
        for f in log.frames:
            if f[0] - log.t0 >= t0:
                f[0] += dt
    elif kind == "stamp":
        t0, dt = float(a[0]), float(a[1])
        f = next(f for f in log.frames if f[0] - log.t0 >= t0)
        f[0] += dt
    else:
        raise SystemExit(f"unknown fault {spec!r} (see --help)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--dbc", required=True)
    p.add_argument("faults", nargs="+")
    o = p.parse_args()
    log, dbc = Log(o.input), Dbc(o.dbc)
    for spec in o.faults:
        apply(log, dbc, spec)
    log.write(o.output)


if __name__ == "__main__":
    sys.exit(main())
