# SPDX-License-Identifier: GPL-2.0
"""What the benchmark reports share: which clock a run's guests followed,
and the lock arms' rounds (bench.sh -r) merged into one record."""
import json
import os
import statistics


def describe_clock(out):
    """'1 vCPU, guest time from instructions' or 'N vCPUs, the host's clock',
    from DIR/clock.json (scripts/bench writes it; older runs have none: the
    host's clock, 2 vCPUs)."""
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


def merge_rounds(locks):
    # One record per lock, length and arm: the rounds' mean throughput and
    # share interrupted, the median of their percentiles, the largest max,
    # the yields summed; 'rounds' and 'spread' ((max - min) / mean of the
    # rounds' throughput) say how far the rounds were apart.
    groups = {}
    for r in locks:
        groups.setdefault((r["lock"], r["cs_ns"], r["arm"]), []).append(r)
    merged = []
    for rs in groups.values():
        m = dict(rs[0])
        tput = [r["throughput"] for r in rs]
        m["throughput"] = statistics.mean(tput)
        m["interrupted"] = statistics.mean(r["interrupted"] for r in rs)
        for key in ("wait_p50", "wait_p99", "wait_p999", "hold_p50", "hold_p999"):
            if key in m:
                m[key] = statistics.median(r[key] for r in rs)
        for key in ("wait_max", "hold_max"):
            m[key] = max(r[key] for r in rs)
        m["yielded"] = sum(r["yielded"] for r in rs)
        m["rounds"] = len(rs)
        m["spread"] = (max(tput) - min(tput)) / max(m["throughput"], 1)
        merged.append(m)
    return merged


def merge_ends(rs):
    # bench.sh's "ends" records (an implementation's grant counters around
    # a timed run) summed per run name over the rounds: {run: {counter:
    # sum, "rounds": n}}. Records without a counter (a kernel without
    # RSEQ_STATS) are left out.
    by = {}
    for r in rs:
        if r.get("bench") != "ends":
            continue
        counts = {k: v for k, v in r.items() if k not in ("bench", "run", "round")}
        if not counts:
            continue
        m = by.setdefault(r["run"], {"rounds": 0})
        m["rounds"] += 1
        for k, v in counts.items():
            m[k] = m.get(k, 0) + v
    return by


def merge_held(rs):
    # The rounds' histograms of one run name, summed.
    by = {}
    for r in rs:
        m = by.setdefault(r["run"], {"run": r["run"], "n": 0, "max_ns": 0, "ends": {}, "hist": {}})
        m["n"] += r["n"]
        m["max_ns"] = max(m["max_ns"], r["max_ns"])
        for e, c in r["ends"].items():
            m["ends"][e] = m["ends"].get(e, 0) + c
        for lo, c in r["hist"]:
            m["hist"][lo] = m["hist"].get(lo, 0) + c
    for m in by.values():
        m["hist"] = sorted(m["hist"].items())
    return list(by.values())
