#!/usr/bin/python3
"""Oracle for the DBC decoder: decodes frames with Debian's python3-canmatrix.

usage: /usr/bin/python3 canmatrix_decode.py IN.json OUT.json

IN:  {"dbcs": [{"path": "x.dbc", "frames": [{"id": 291, "extended": false, "data": "0011.."}]}]}
OUT: {"dbcs": [{"messages": N, "signals": M,
                "frames": [{"signals": {"Name": {"raw": 5, "phys": 0.5}}} | {"error": "..."}]}]}
Raw values are integers for integer signals and floats for IEEE signals; non-finite floats
are written as the strings "nan", "inf", "-inf" (JSON has no such numbers).
"""
import json
import logging
import math
import sys

logging.disable(logging.CRITICAL)  # canmatrix logs every unsupported format on import
import canmatrix  # noqa: E402
import canmatrix.formats  # noqa: E402


def number(v):
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return v if isinstance(v, int) else f


def main():
    with open(sys.argv[1]) as f:
        request = json.load(f)
    out = {"dbcs": []}
    for entry in request["dbcs"]:
        db = canmatrix.formats.loadp_flat(entry["path"])
        result = {
            "messages": len(db.frames),
            "signals": sum(len(fr.signals) for fr in db.frames),
            "frames": [],
        }
        for fr in entry["frames"]:
            frame = db.frame_by_id(canmatrix.ArbitrationId(id=fr["id"], extended=fr["extended"]))
            if frame is None:
                result["frames"].append({"error": "no such message"})
                continue
            try:
                decoded = frame.decode(bytes.fromhex(fr["data"]))
            except Exception as e:  # noqa: BLE001 - reported to the test as a mismatch
                result["frames"].append({"error": f"{type(e).__name__}: {e}"})
                continue
            signals = {}
            for name, d in decoded.items():
                raw = d.raw_value
                raw = int(raw) if not d.signal.is_float else float(raw)
                signals[name] = {"raw": number(raw), "phys": number(d.phys_value)}
            result["frames"].append({"signals": signals})
        out["dbcs"].append(result)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
