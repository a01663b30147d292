#!/usr/bin/env python3
"""Soak run (the "soak" case of tests/vm/run, outside --quick; docs/faults.md): mixed clients
on the kernel client's mounts of one rnfsd for --minutes, while the server is killed
(SIGKILL) and restarted every --restart-every seconds and its device stalls every
--fault-every seconds; nothing acknowledged may be lost, nothing may be refused, and rnfsd's
memory and descriptors are sampled every --sample-every seconds.

Workers, each until the time is up (each finishes the round it is in):
  fsx       tests/vm/workload.py's fsx (random writes, reads, truncates, mmap, fsyncs,
            reopens with caches dropped, O_DIRECT reads against an in-memory model), a new
            seed each round, on the v4.2 mount
  counter   four processes (two on the v3 mount, two on v4.2) add to a number in one file,
            each increment under a blocking fcntl lock of the whole file: at the end the
            number equals the increments made
  churn     creates, renames, unlinks and lists files in a directory of the v4.2 mount and
            checks each listing against the names it expects; a REMOVE or RENAME answered
            ENOENT counts when it took effect (a call resent to a restarted server, whose
            reply cache is empty, finds its own work done), and their number is printed
  seq       writes --seq-mib MiB with fsync on the v3 mount, reads it back (O_DIRECT, so
            from the server) and compares
  pnfs      the same on a pNFS mount (--pnfs): the data goes to the data server under the
            client's layouts while the metadata server is the one killed

Prints one "sub=NAME status=PASS|FAIL ops=N time=SECS reason=TEXT" line per worker, the
samples as CSV (--csv) and a picture of them (--svg), and a SOAK line with the totals; exit
status 1 when any worker failed.
"""
import argparse
import fcntl
import hashlib
import multiprocessing as mp
import os
import random
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402  (its fsx case)

MIB = 1 << 20
# fsx's per-round summary would be a line every few seconds; its history on a failure stays
workload.log = lambda msg: print(msg, flush=True) if msg.startswith("  op") else None


def until(deadline):
    return time.time() < deadline


def worker(name, fn, deadline, ops, errors):
    """Runs fn(deadline, ops) in a process of its own; a failure goes to errors."""
    try:
        fn(deadline, ops)
    except (workload.Fail, AssertionError) as e:
        errors.put((name, str(e)))
    except OSError as e:
        errors.put((name, f"{e.strerror} ({e.errno}) at {e.filename}"))


def fsx(d):
    def run(deadline, ops):
        seed = 1
        while until(deadline):
            sub = os.path.join(d, f"fsx-{seed}")
            os.makedirs(sub, exist_ok=True)
            workload.case_fsx(sub, types.SimpleNamespace(seed=seed, fsx_ops=300))
            os.rmdir(sub)
            with ops.get_lock():
                ops.value += 300
            seed += 1
    return run


def counter_one(path, deadline, ops, made):
    fd = os.open(path, os.O_RDWR)
    try:
        while until(deadline):
            fcntl.lockf(fd, fcntl.LOCK_EX, 0, 0)
            v = int(os.pread(fd, 32, 0).split(b"\0")[0] or b"0")
            os.pwrite(fd, str(v + 1).encode().ljust(32, b"\0"), 0)
            fcntl.lockf(fd, fcntl.LOCK_UN, 0, 0)
            with made.get_lock():
                made.value += 1
            with ops.get_lock():
                ops.value += 1
    finally:
        os.close(fd)


def churn(d):
    replays = [0]

    def gone(path, also=None):
        """A REMOVE or RENAME answered ENOENT: accepted when it took effect all the same (the
        name is gone, a rename's new name is there). A reply lost to a server's SIGKILL makes
        the client send the call again to the new instance, whose reply cache is empty."""
        if os.path.lexists(path) or (also is not None and not os.path.lexists(also)):
            return False
        replays[0] += 1
        return True

    def unlink(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            if not gone(path):
                raise

    def run(deadline, ops):
        rnd = random.Random(7)
        os.makedirs(d, exist_ok=True)
        names = set()
        n = 0
        try:
            loop(deadline, ops, rnd, names, n)
        finally:
            print(f"churn: {replays[0]} REMOVEs or RENAMEs answered ENOENT having taken effect",
                  flush=True)

    def loop(deadline, ops, rnd, names, n):
        while until(deadline):
            op = rnd.choice(["create", "create", "rename", "unlink", "list"])
            if op == "create" or not names:
                name = f"f{n}"
                n += 1
                with open(os.path.join(d, name), "xb") as f:
                    f.write(name.encode())
                names.add(name)
            elif op == "rename":
                old = rnd.choice(sorted(names))
                new = f"r{n}"
                n += 1
                try:
                    os.rename(os.path.join(d, old), os.path.join(d, new))
                except FileNotFoundError:
                    if not gone(os.path.join(d, old), os.path.join(d, new)):
                        raise
                names.discard(old)
                names.add(new)
            elif op == "unlink":
                old = rnd.choice(sorted(names))
                unlink(os.path.join(d, old))
                names.discard(old)
            else:
                got = set(os.listdir(d))
                if got != names:
                    raise workload.Fail(f"churn: listing differs: missing {sorted(names - got)[:5]}, "
                                        f"extra {sorted(got - names)[:5]}")
            if len(names) > 500:  # keep the directory a few READDIR rounds long
                for old in sorted(names)[:250]:
                    unlink(os.path.join(d, old))
                    names.discard(old)
            with ops.get_lock():
                ops.value += 1
    return run


def sequential(d, mib, tag):
    def run(deadline, ops):
        r = 0
        while until(deadline):
            path = os.path.join(d, f"{tag}-{r}")
            seed = hashlib.sha256(f"{tag}-{r}".encode()).digest()
            block = (seed * (MIB // len(seed)))
            want = hashlib.sha256()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for i in range(mib):
                    b = block[i % 32:] + block[:i % 32]
                    workload.write_all(fd, b)
                    want.update(b)
                os.fsync(fd)
            finally:
                os.close(fd)
            got = hashlib.sha256(workload.read_direct(path)).hexdigest()
            if got != want.hexdigest():
                raise workload.Fail(f"{tag}: round {r}: {path} reads back other than written")
            os.unlink(path)
            r += 1
            with ops.get_lock():
                ops.value += 1
    return run


def event(name, cmd, at, times, errors):
    """Runs a restart or stall command at `at` seconds; its failure goes to errors."""
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    print(f"soak {at:.0f} s: {r.stdout.strip() or r.stderr.strip()}", flush=True)
    if r.returncode != 0:
        errors.put((name, r.stdout.strip() + r.stderr.strip()))
    times.append(at)


def sample(pid_file):
    """(pid, RSS KiB, open descriptors) of the server now, or None between its lives."""
    try:
        pid = int(open(pid_file).read().split()[0])
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return pid, rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError, StopIteration):
        return None


def svg(rows, restarts, faults, path):
    """RSS (MiB, left axis) and descriptors (right axis) over minutes; restarts and stalls as
    vertical lines. Written by hand: the guest has no plotting library."""
    if not rows:
        return
    w, h, m = 900, 360, 60
    t_max = max(r[0] for r in rows) or 1
    rss_max = max(r[2] for r in rows) / 1024 * 1.1 or 1
    fd_max = max(r[3] for r in rows) * 1.1 or 1

    def x(t):
        return m + (w - 2 * m) * t / t_max

    def y(v, top):
        return h - m + -(h - 2 * m) * v / top

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{w - m}" y1="{m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
           f'<text x="{m}" y="{m - 10}" fill="steelblue">RSS, MiB (max {rss_max / 1.1:.0f})</text>',
           f'<text x="{w - m}" y="{m - 10}" text-anchor="end" fill="darkorange">'
           f'open descriptors (max {fd_max / 1.1:.0f})</text>',
           f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle">minutes ({t_max / 60:.0f}); '
           f'grey: rnfsd killed and restarted, red: device stalled</text>']
    for t in restarts:
        out.append(f'<line x1="{x(t):.1f}" y1="{m}" x2="{x(t):.1f}" y2="{h - m}" stroke="#bbb"/>')
    for t in faults:
        out.append(f'<line x1="{x(t):.1f}" y1="{m}" x2="{x(t):.1f}" y2="{h - m}" stroke="#e88" '
                   f'stroke-dasharray="3,3"/>')
    for col, top, color in ((2, rss_max * 1024, "steelblue"), (3, fd_max, "darkorange")):
        seg = []
        for r in rows:
            seg.append(f"{x(r[0]):.1f},{y(r[col], top):.1f}")
        out.append(f'<polyline fill="none" stroke="{color}" points="{" ".join(seg)}"/>')
    for i in range(0, int(t_max // 60) + 1, max(1, int(t_max // 600))):
        out.append(f'<text x="{x(i * 60):.1f}" y="{h - m + 15}" text-anchor="middle">{i}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--v3", required=True, help="a directory on the NFSv3 mount")
    ap.add_argument("--v4", required=True, help="the same export on an NFSv4.2 mount")
    ap.add_argument("--pnfs", help="a directory on a v4.2 mount of a pNFS export")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--restart-cmd", required=True)
    ap.add_argument("--restart-every", type=float, default=300)
    ap.add_argument("--stall-cmd", required=True)
    ap.add_argument("--fault-every", type=float, default=300)
    ap.add_argument("--pid-file", required=True)
    ap.add_argument("--sample-every", type=float, default=10)
    ap.add_argument("--seq-mib", type=int, default=64)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--svg", required=True)
    a = ap.parse_args()

    t0 = time.time()
    deadline = t0 + a.minutes * 60
    errors = mp.Queue()
    made = mp.Value("q", 0)
    counter_path = os.path.join(a.v4, "soak-counter")
    with open(counter_path, "wb") as f:
        f.write(b"0".ljust(32, b"\0"))
    counter_v3 = os.path.join(a.v3, "soak-counter")
    plan = [("fsx", fsx(a.v4)), ("churn", churn(os.path.join(a.v4, "churn"))),
            ("seq", sequential(a.v3, a.seq_mib, "seq"))]
    if a.pnfs:
        plan.append(("pnfs", sequential(a.pnfs, max(1, a.seq_mib // 2), "pnfs")))
    ops = {name: mp.Value("q", 0) for name, _ in plan}
    ops["counter"] = mp.Value("q", 0)
    procs = [mp.Process(target=worker, args=(name, fn, deadline, ops[name], errors))
             for name, fn in plan]
    for i, path in enumerate((counter_v3, counter_v3, counter_path, counter_path)):
        procs.append(mp.Process(target=worker, args=(
            f"counter{i}", lambda dl, o, p=path: counter_one(p, dl, o, made), deadline,
            ops["counter"], errors)))
    for p in procs:
        p.start()

    rows, restarts, faults = [], [], []
    next_restart, next_fault = t0 + a.restart_every, t0 + a.fault_every / 2
    next_sample = t0
    while until(deadline):
        now = time.time()
        if now >= next_sample:
            s = sample(a.pid_file)
            if s:
                rows.append((round(now - t0, 1), s[0], s[1], s[2]))
            next_sample += a.sample_every
        if now >= next_restart:
            event("restart", a.restart_cmd, now - t0, restarts, errors)
            next_restart += a.restart_every
        if now >= next_fault:
            event("stall", a.stall_cmd, now - t0, faults, errors)
            next_fault += a.fault_every
        time.sleep(max(0.0, min(next_sample, next_restart, next_fault, deadline) - time.time()))
    for p in procs:
        p.join(600)
    stuck = [p for p in procs if p.is_alive()]
    s = sample(a.pid_file)
    if s:
        rows.append((round(time.time() - t0, 1), s[0], s[1], s[2]))

    failed = {}
    while not errors.empty():
        name, why = errors.get()
        failed.setdefault(name.rstrip("0123456789"), []).append(f"{name}: {why}")
    final = int(open(counter_path, "rb").read(32).split(b"\0")[0] or b"0")
    if final != made.value:
        failed.setdefault("counter", []).append(f"counter {final}, increments made {made.value}")
    if stuck:
        failed.setdefault("stuck", []).append(f"{len(stuck)} workers still running 600 s after the end")
    os.unlink(counter_path)
    elapsed = time.time() - t0
    for name in [n for n, _ in plan] + ["counter"]:
        why = "; ".join(failed.get(name, [])) or "-"
        st = "FAIL" if name in failed else "PASS"
        print(f"sub={name} status={st} ops={ops[name].value} time={elapsed:.0f} reason={why}",
              flush=True)
    for name in set(failed) - {n for n, _ in plan} - {"counter"}:
        print(f"sub={name} status=FAIL ops=0 time={elapsed:.0f} reason={'; '.join(failed[name])}",
              flush=True)

    with open(a.csv, "w") as f:
        f.write("seconds,pid,rss_kib,fds\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")
    svg(rows, restarts, faults, a.svg)
    # per life of the server (between restarts): RSS and descriptors after its first minute
    lives = {}
    for t, pid, rss, fds in rows:
        lives.setdefault(pid, []).append((t, rss, fds))
    for pid, xs in lives.items():
        warm = [x for x in xs if x[0] - xs[0][0] >= 60] or xs
        print(f"life pid {pid}: {xs[0][0]:.0f}-{xs[-1][0]:.0f} s, RSS {warm[0][1] / 1024:.0f} -> "
              f"{warm[-1][1] / 1024:.0f} MiB (max {max(x[1] for x in warm) / 1024:.0f}), "
              f"descriptors {warm[0][2]} -> {warm[-1][2]} (max {max(x[2] for x in warm)})",
              flush=True)
    total = sum(v.value for v in ops.values())
    print(f"SOAK {elapsed / 60:.0f} min: {total} operations ({', '.join(f'{k} {v.value}' for k, v in ops.items())}), "
          f"{len(restarts)} restarts, {len(faults)} stalls, "
          f"RSS max {max((r[2] for r in rows), default=0) / 1024:.0f} MiB, "
          f"descriptors max {max((r[3] for r in rows), default=0)}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
