"""The progress bar while a fleet runs: tqdm (Debian's python3-tqdm) over the bytes of log
replayed, since a drive's replay time grows with its log; the ETA follows from that."""

import sys


class Progress:
    def __init__(self, drives, total_bytes, enabled=True):
        self.drives, self.done, self.failed = drives, 0, 0
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=max(total_bytes, 1), unit="B", unit_scale=True, file=sys.stderr,
                            mininterval=0.5, dynamic_ncols=True,
                            bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} of log "
                                       "[{elapsed}<{remaining}, {rate_fmt}]")
            self._describe()

    def _describe(self):
        self.bar.set_description_str(f"drives {self.done}/{self.drives}" +
                                     (f" ({self.failed} failed)" if self.failed else ""), refresh=False)

    def update(self, nbytes, failed):
        self.done += 1
        self.failed += bool(failed)
        if self.bar is not None:
            self._describe()
            self.bar.update(max(nbytes, 0 if self.done < self.drives else 1))

    def close(self):
        if self.bar is not None:
            self.bar.close()
