#!/usr/bin/python3
"""Oracle for the log readers: reads candump -l (.log) and Vector ASC (.asc) files with
Debian's python3-can and prints the frames as JSON.

usage: /usr/bin/python3 python_can_read.py OUT.json FILE...

OUT: {"files": [{"frames": [{"t": 1.5, "id": 291, "extended": false, "remote": false,
      "error": false, "fd": false, "brs": false, "esi": false, "dlc": 2, "data": "0102",
      "channel": "can0" | 0 | null}]}]}
"""
import json
import sys

import can


def main():
    out = {"files": []}
    for path in sys.argv[2:]:
        reader = can.ASCReader(path, relative_timestamp=False) if path.endswith(".asc") else can.CanutilsLogReader(path)
        frames = []
        for m in reader:
            frames.append({
                "t": m.timestamp,
                "id": m.arbitration_id,
                "extended": bool(m.is_extended_id),
                "remote": bool(m.is_remote_frame),
                "error": bool(m.is_error_frame),
                "fd": bool(m.is_fd),
                "brs": bool(m.bitrate_switch),
                "esi": bool(m.error_state_indicator),
                "dlc": m.dlc,
                "data": bytes(m.data or b"").hex(),
                "channel": m.channel,
            })
        out["files"].append({"frames": frames})
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
