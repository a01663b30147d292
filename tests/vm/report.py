#!/usr/bin/env python3
"""Reads the RESULT lines of a harness console log and prints the side-by-side table
(knfsd | rnfsd per version, transport and case). Exit status 1 when any case failed or
has no result, 0 otherwise.

    tests/vm/report.py --console target/vm/console-STAMP.log
"""

import argparse
import re
import sys

# how much of the console the report repeats for each of the first failures
EVIDENCE_FAILURES = 3
EVIDENCE_BEFORE = 15
EVIDENCE_AFTER = 60

RESULT = re.compile(r"RESULT server=(\S+) vers=(\S+) transport=(\S+) case=(\S+) "
                    r"status=(PASS|FAIL|SKIP) time=(\S+) reason=(.*)$")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--console", required=True)
    ap.add_argument("--servers", help="space-separated; default: as found in the log")
    ap.add_argument("--transports")
    ap.add_argument("--versions")
    ap.add_argument("--cases", help="comma-separated")
    ap.add_argument("--elapsed", help="seconds the guest ran")
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--timed-out", action="store_true")
    ap.add_argument("--combos", help="space-separated TRANSPORT:VERSION; default: every pair")
    a = ap.parse_args()

    res = {}
    order = {"server": [], "transport": [], "vers": [], "case": []}
    lines = []
    failed_at = []  # console line numbers of FAIL results, for the evidence section
    with open(a.console, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", "replace").replace("\r", "").rstrip("\n")
            lines.append(line)
            i = line.find("RESULT server=")
            if i < 0:
                continue
            m = RESULT.match(line[i:])
            if not m:
                continue
            s, v, t, c, st, tm, why = m.groups()
            if st == "FAIL":
                failed_at.append(len(lines) - 1)
            res[(s, v, t, c)] = (st, float(tm) if re.fullmatch(r"[0-9.]+", tm) else 0.0, why)
            for k, x in (("server", s), ("transport", t), ("vers", v), ("case", c)):
                if x not in order[k]:
                    order[k].append(x)
    servers = a.servers.split() if a.servers else order["server"]
    transports = a.transports.split() if a.transports else order["transport"]
    versions = a.versions.split() if a.versions else order["vers"]
    cases = a.cases.split(",") if a.cases else order["case"]

    out = []
    p = out.append
    missing = "no result (guest died or timed out)" + (" — guest time limit hit" if a.timed_out else "")
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    rnfsd_only = {}  # (server+combination, reason) -> cases
    other_fail = {}
    cell_w = 16
    head = f"{'vers':<5} {'transport':<9} {'case':<10}" + "".join(f" {s:<{cell_w}}" for s in servers)
    if len(servers) == 2:
        head += f" {'ratio':>6}  verdict"
    p(head)
    p("-" * len(head))
    combos = [tuple(x.split(":", 1)) for x in a.combos.split()] if a.combos else \
        [(t, v) for t in transports for v in versions]
    for t, v in combos:
        if True:
            for c in cases:
                row = f"{v:<5} {t:<9} {c:<10}"
                sts = {}
                for s in servers:
                    st, tm, why = res.get((s, v, t, c), ("FAIL", 0.0, missing))
                    if (s, v, t, c) not in res:
                        res[(s, v, t, c)] = (st, tm, why)
                    counts[st] += 1
                    sts[s] = (st, tm)
                    cell = f"{st} {tm:.1f}s" if st != "SKIP" else "SKIP"
                    row += f" {cell:<{cell_w}}"
                if len(servers) == 2:
                    (s1, s2) = servers
                    (a1, t1), (a2, t2) = sts[s1], sts[s2]
                    ratio = f"{t2 / t1:.2f}" if a1 == a2 == "PASS" and t1 > 0.05 else ""
                    verdict = ""
                    if a2 == "FAIL" and a1 == "PASS":
                        verdict = f"{s2} FAILS ({s1} passes)"
                    elif a1 == "FAIL" and a2 == "FAIL":
                        verdict = "both fail"
                    elif a1 == "FAIL":
                        verdict = f"{s1} fails"
                    elif a2 == "FAIL":
                        verdict = f"{s2} fails"
                    row += f" {ratio:>6}  {verdict}"
                p(row.rstrip())
                for s in servers:
                    st, _, why = res[(s, v, t, c)]
                    if st == "FAIL":
                        group = (rnfsd_only if s == "rnfsd" and sts.get("knfsd", ("",))[0] == "PASS"
                                 else other_fail)
                        key = (f"{s} vers={v} transport={t}", why)
                        if key not in group:
                            group[key] = []
                        group[key].append(c)
    p("")
    skipped = sorted({(s, why) for (s, v, t, c), (st, _, why) in res.items()
                      if st == "SKIP" and s in servers and c in cases})
    if skipped:
        p("skipped:")
        for s, why in skipped:
            n = sum(1 for k, r in res.items() if k[0] == s and r[0] == "SKIP" and r[2] == why)
            p(f"  {s}: {n} cases: {why}")
    for title, group in (("rnfsd failures where knfsd passes:", rnfsd_only),
                         ("other failures:", other_fail)):
        if group:
            p(title)
            for (combo, why), cs in group.items():
                which = "all cases" if len(cs) == len(cases) else ",".join(cs)
                p(f"  {combo} {which}: {why}")
    # CI keeps only the tail of what a run prints: the logs a failing case dumped around its
    # RESULT line (tests/vm/guest.sh `dump`, `dmesg_tail`) are repeated here, last
    for n in failed_at[:EVIDENCE_FAILURES]:
        p("")
        first, last = max(0, n - EVIDENCE_BEFORE), min(len(lines), n + EVIDENCE_AFTER + 1)
        p(f"evidence: console lines {first + 1}-{last} around: "
          f"{lines[n][lines[n].find('RESULT '):]}")
        for line in lines[first:last]:
            p(f"  {line[:300]}")
    if len(failed_at) > EVIDENCE_FAILURES:
        p(f"(evidence of {len(failed_at) - EVIDENCE_FAILURES} more failures in the console log)")
    if a.elapsed:
        p(f"guest ran {a.elapsed}s; console log {a.console}")
    p(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
