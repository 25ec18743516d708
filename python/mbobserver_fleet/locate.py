"""Where the programs and the shipped data are: --bin-dir, else next to mbobserver-fleet (the
install's bin folder, or the build tree's src/programs where CMake puts the build's launcher),
else PATH. The launcher passes its own folder and the shipped scenarios and configuration."""

import os
import shutil
import subprocess

from .fleet import UsageError


def find_program(name, bin_dir, tool_dir):
    if bin_dir:
        path = os.path.join(bin_dir, name)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise UsageError(f"--bin-dir {bin_dir}: no executable {name}")
        return os.path.abspath(path)
    if tool_dir:
        path = os.path.join(tool_dir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    path = shutil.which(name)
    if not path:
        raise UsageError(f"{name} not found next to mbobserver-fleet, in --bin-dir or on PATH")
    return os.path.abspath(path)


class Tools:
    """The daemon and the evaluator a fleet run uses."""

    def __init__(self, bin_dir, tool_dir):
        self.daemon = find_program("mbobserverd", bin_dir, tool_dir)
        self.eval = find_program("mbobserver-eval", bin_dir, tool_dir)

    def check_config(self, config):
        """mbobserverd --check-config: exit 2 and its one line when the configuration is bad."""
        p = subprocess.run([self.daemon, "--config", config, "--check-config"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        if p.returncode != 0:
            lines = [ln for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
            raise UsageError(lines[-1] if lines else f"{config}: mbobserverd --check-config exit {p.returncode}")
