#!/usr/bin/env python3
"""High-availability checks for the guest (the "failover" case of tests/vm/run, docs/ha.md):
two rnfsd heads serve one identity through an etcd cluster and a service address; the
kernel client has it mounted with NFSv3 (locks through NLM) and NFSv4.2, and the active head is
killed (SIGKILL, its address taken away as a fencing agent would) again and again while
clients work. Nothing acknowledged may be lost and no client may need a remount.

  write     one process writes --write-mib MiB (1 MiB blocks, a pattern of its own per
            block) to a file on the v4.2 mount and fsyncs it, while heads are killed; then,
            caches dropped, the file reads back identical through both mounts
  counter   four processes (two on the v3 mount, two on the v4.2 mount) add --increments to
            a counter in one file, each increment under a blocking fcntl lock, while heads
            are killed: the final count is exact (a lock held by two at once, or a write
            lost, shows as a smaller count)
  pnfs      only with --pnfs DIR (a v4.2 mount of a pNFS export of the same heads, which are
            its metadata server, each file mirrored on the --pnfs-ds data servers): as write,
            with the file's data going to the data servers under the client's layouts while
            the metadata server's head is killed; it reads back identical through the pNFS
            mount, and each data server holds a full copy of it (the new head found the
            file's placement in etcd)
  after     a lock is taken and released on each mount once the kills are over

Kills run on a thread of their own during write and counter: --failover-cmd (which kills
the active head, takes its address away, waits for the standby to serve and starts a new
standby, printing "ready after SECS") --kills times in each, spread evenly over the bytes
written or the increments made (each workload goes on while the heads change). After
each, a probe (a 4 KiB write and fsync of a file of its own on the v4.2 mount) measures when
clients are served again. Prints one "sub=NAME status=PASS|FAIL time=SECS reason=TEXT" line
per step and a FAILOVER line with the figures; exit status 1 when any step failed.
"""
import argparse
import fcntl
import hashlib
import multiprocessing as mp
import os
import re
import statistics
import subprocess
import sys
import threading
import time

MIB = 1 << 20


class Failed(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise Failed(why)


def block(i):
    """The bytes of block i of the written file: a pattern each block has its own."""
    h = hashlib.sha256(f"failover-{i}".encode()).digest()
    return (h * (MIB // len(h)))[:MIB]


def drop_caches():
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Killer:
    """Runs the failover command on a thread of its own at points of a workload's progress
    (a shared counter the workload moves on); records when the standby served and when the
    probe was answered."""

    def __init__(self, cmd, probe):
        self.cmd, self.probe = cmd, probe
        self.ready = []  # seconds from the kill to the standby serving (the command's figure)
        self.served = []  # seconds from the kill to the probe's write + fsync returning
        self.errors = []
        self.thread = None
        self.done = threading.Event()

    def start(self, progress, points):
        """Fails over once `progress` reaches each of `points` (in order)."""
        self.done.clear()
        self.thread = threading.Thread(target=self._run, args=(progress, points), daemon=True)
        self.thread.start()

    def join(self):
        """Waits for the failovers (the workload has finished: those not reached are errors)."""
        self.done.set()
        if self.thread:
            self.thread.join(900)

    def _run(self, progress, points):
        for k, point in enumerate(points, 1):
            while progress.value < point:
                if self.done.wait(0.05):
                    self.errors.append(f"the workload ended before failover {k} (at {point})")
                    return
            t0 = time.monotonic()
            out = subprocess.run(self.cmd, shell=True, capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                self.errors.append(f"failover command exited {out.returncode}: "
                                   f"{(out.stdout + out.stderr).strip()[-300:]}")
                return
            m = re.search(r"ready after ([0-9.]+)", out.stdout)
            if m:
                self.ready.append(float(m.group(1)))
            try:
                with open(self.probe, "wb") as f:
                    f.write(b"p" * 4096)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:
                self.errors.append(f"probe after a failover: {e}")
                return
            self.served.append(time.monotonic() - t0)
            print(f"failover {len(self.served)} at {point}: standby ready after "
                  f"{self.ready[-1] if self.ready else '?'} s, a client served after "
                  f"{self.served[-1]:.1f} s", flush=True)


def points(total, kills):
    """Where the kills fall: evenly inside the workload, none at its ends."""
    return [total * k // (kills + 1) for k in range(1, kills + 1)]


def write_file(path, mib, progress, conn):
    try:
        with open(path, "wb") as f:
            for i in range(mib):
                f.write(block(i))
                progress.value = i + 1
            f.flush()
            os.fsync(f.fileno())
        conn.send("ok")
    except OSError as e:
        conn.send(f"{e.strerror} ({e.errno})")


def case_write(a, killer, kills, write_dir=None, read_dirs=None, mib=None):
    """Writes `mib` MiB (default --write-mib) to write_dir/big (default: on the v4.2 mount)
    while heads are killed, and reads it back through each of read_dirs (default: both
    mounts)."""
    write_dir = write_dir or a.v4
    read_dirs = read_dirs or (a.v4, a.v3)
    mib = mib or a.write_mib
    path = os.path.join(write_dir, "big")
    parent, child = mp.Pipe()
    progress = mp.Value("q", 0)
    p = mp.Process(target=write_file, args=(path, mib, progress, child))
    killer.start(progress, points(mib, kills))
    p.start()
    ok = parent.poll(1800)
    if not ok:
        p.kill()
        killer.join()
        raise Failed(f"the writer did not finish in 1800 s ({killer.errors})")
    r = parent.recv()
    p.join(10)
    killer.join()
    expect(not killer.errors, "; ".join(killer.errors))
    expect(r == "ok", f"writing {mib} MiB with fsync: {r}")
    drop_caches()
    want = hashlib.sha256()
    for i in range(mib):
        want.update(block(i))
    for d in read_dirs:
        got = hashlib.sha256()
        size = 0
        with open(os.path.join(d, "big"), "rb") as f:
            while True:
                b = f.read(MIB)
                if not b:
                    break
                got.update(b)
                size += len(b)
        expect(size == mib * MIB, f"{d}/big has {size} bytes, not {mib * MIB}")
        expect(got.digest() == want.digest(), f"{d}/big does not read back as written")
    return path, want.digest()


def case_pnfs(a, killer, kills):
    mib = a.pnfs_mib or a.write_mib
    path, want = case_write(a, killer, kills, a.pnfs, (a.pnfs,), mib)
    # each data server has a copy: a file of the whole size whose bytes are the written ones
    for ds in a.pnfs_ds:
        copies = []
        for name in os.listdir(ds):
            p = os.path.join(ds, name)
            if os.path.isfile(p) and os.path.getsize(p) == mib * MIB:
                with open(p, "rb") as f:
                    copies.append(hashlib.sha256(f.read()).digest() == want)
        expect(any(copies), f"data server {ds} holds no full copy of the file ({len(copies)} "
                            f"files of its size)")
    os.unlink(path)


def count(path, n, progress, conn):
    try:
        fd = os.open(path, os.O_RDWR)
        for _ in range(n):
            fcntl.lockf(fd, fcntl.LOCK_EX, 0, 0)
            v = int(os.pread(fd, 32, 0).split(b"\0")[0] or b"0")
            os.pwrite(fd, str(v + 1).encode().ljust(32, b"\0"), 0)
            fcntl.lockf(fd, fcntl.LOCK_UN, 0, 0)
            with progress.get_lock():
                progress.value += 1
        os.close(fd)
        conn.send("ok")
    except OSError as e:
        conn.send(f"{e.strerror} ({e.errno})")


def case_counter(a, killer, kills):
    v3, v4 = os.path.join(a.v3, "counter"), os.path.join(a.v4, "counter")
    with open(v3, "wb") as f:
        f.write(b"0".ljust(32, b"\0"))
        os.fsync(f.fileno())
    paths = [{"v3": v3, "v4": v4}[m] for m in a.counter_mounts.split(",")]
    each = a.increments // len(paths)
    progress = mp.Value("q", 0)
    procs = []
    killer.start(progress, points(each * len(paths), kills))
    for p in paths:
        parent, child = mp.Pipe()
        proc = mp.Process(target=count, args=(p, each, progress, child))
        proc.start()
        procs.append((proc, parent))
    outcomes = []
    for proc, parent in procs:
        if not parent.poll(1800):
            for q, _ in procs:
                q.kill()
            killer.join()
            raise Failed(f"a counting process did not finish in 1800 s ({killer.errors})")
        outcomes.append(parent.recv())
        proc.join(10)
    killer.join()
    expect(not killer.errors, "; ".join(killer.errors))
    expect(all(o == "ok" for o in outcomes), f"counting processes: {outcomes}")
    with open(v4, "rb") as f:
        final = int(f.read(32).split(b"\0")[0])
    expect(final == each * len(paths), f"counter {final}, expected {each * len(paths)}")
    os.unlink(v4)


def case_after(a):
    for d in (a.v3, a.v4):
        path = os.path.join(d, "after")
        with open(path, "wb") as f:
            fcntl.lockf(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
            f.write(b"after")
            fcntl.lockf(f.fileno(), fcntl.LOCK_UN, 0, 0)
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--v3", required=True, help="a directory on the NFSv3 mount")
    ap.add_argument("--v4", required=True, help="the same directory on the NFSv4.2 mount")
    ap.add_argument("--failover-cmd", required=True)
    ap.add_argument("--kills", type=int, default=3, help="failovers in each of write, counter")
    ap.add_argument("--write-mib", type=int, default=64)
    ap.add_argument("--increments", type=int, default=2000)
    ap.add_argument("--counter-mounts", default="v3,v3,v4,v4",
                    help="the mount each counting process works through (v3 or v4)")
    ap.add_argument("--pnfs", help="a directory on a v4.2 mount of the heads' pNFS export")
    ap.add_argument("--pnfs-mib", type=int, default=0,
                    help="MiB written in the pnfs step (default --write-mib)")
    ap.add_argument("--pnfs-ds", action="append", default=[],
                    help="a data server's exported directory (repeat)")
    a = ap.parse_args()
    killer = Killer(a.failover_cmd, os.path.join(a.v4, "probe"))
    failed = 0
    steps = [("write", lambda: os.unlink(case_write(a, killer, a.kills)[0])),
             ("counter", lambda: case_counter(a, killer, a.kills))]
    if a.pnfs:
        steps.append(("pnfs", lambda: case_pnfs(a, killer, a.kills)))
    steps.append(("after", lambda: case_after(a)))
    for name, fn in steps:
        t0 = time.time()
        try:
            fn()
            st, why = "PASS", "-"
        except Failed as e:
            st, why = "FAIL", str(e)
        except OSError as e:
            st, why = "FAIL", f"{e.strerror} ({e.errno}) at {e.filename}"
        if st == "FAIL":
            failed += 1
        print(f"sub={name} status={st} time={time.time() - t0:.2f} reason={why}", flush=True)
    try:
        os.unlink(os.path.join(a.v4, "probe"))
    except OSError:
        pass

    def fig(xs):
        if not xs:
            return "none"
        return f"median {statistics.median(xs):.1f} (min {min(xs):.1f}, max {max(xs):.1f}) s"

    print(f"FAILOVER kills={len(killer.served)}: standby ready after the kill {fig(killer.ready)}; "
          f"a client's write+fsync served after the kill {fig(killer.served)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
