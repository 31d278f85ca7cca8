# SPDX-License-Identifier: GPL-2.0
"""Which clock a benchmark's guests followed: DIR/clock.json, written by
scripts/bench (runs before it had none: the host's clock, 2 vCPUs)."""
import json
import os


def describe(out):
    """'1 vCPU, guest time from instructions' or 'N vCPUs, the host's clock'."""
    try:
        with open(os.path.join(out, "clock.json")) as f:
            clock = json.load(f)
    except (OSError, ValueError):
        clock = {"clock": "host", "vcpus": 2}
    n = clock["vcpus"]
    cpus = "%d vCPU%s" % (n, "" if n == 1 else "s")
    if clock["clock"] == "guest":
        return cpus + ", guest time from instructions"
    return cpus + ", the host's clock"
