#!/usr/bin/env python3
"""NFSv3 locking cases for the guest (the "nlm" case of tests/vm/run): processes on an NFSv3
mount (the kernel client's lockd speaks NLM to the server) and on an NFSv4.2 mount of the same
export take fcntl locks on one file and must see each other's.

  conflict  a v3 lock refuses overlapping requests of another process on the mount, of a
            process on a second v3 mount through another server address (nosharecache: to the
            server another client) and of a v4 process; not a disjoint one
  v4holds   a v4 lock refuses a v3 request until it is released
  block     a blocked v3 request gets the lock within --wakeup seconds (2) of the unlock of a
            holder on the second v3 mount (another client), and of a v4 holder's (the server calls the client back; the client's own
            retry is at 30 s)
  counter   four processes (two on the v3 mount, one on the second, one on the v4 mount)
            increment a counter in one file, each increment under a blocking fcntl lock: the
            final count is exact
  reclaim   (with --restart-cmd) a v3 lock held across a server crash and restart is
            reclaimed: another process is still refused, the holder can release it

Prints one "sub=NAME status=PASS|FAIL time=SECS reason=TEXT" line per case; exit status 1 when
any failed.
"""
import argparse
import errno
import fcntl
import multiprocessing as mp
import os
import subprocess
import sys
import time


def _hold(path, start, length, excl, block, conn):
    fd = os.open(path, os.O_RDWR)
    flags = (fcntl.LOCK_EX if excl else fcntl.LOCK_SH) | (0 if block else fcntl.LOCK_NB)
    try:
        fcntl.lockf(fd, flags, length, start)
    except OSError as e:
        conn.send((errno.errorcode.get(e.errno, str(e.errno)), time.time()))
        return
    conn.send(("ok", time.time()))
    conn.recv()
    fcntl.lockf(fd, fcntl.LOCK_UN, length, start)
    os.close(fd)
    conn.send(("released", time.time()))


class Holder:
    """A process that asks for a lock and, when it got it, holds it until released."""

    def __init__(self, path, start, length, excl=True, block=False):
        self.conn, child = mp.Pipe()
        self.proc = mp.Process(target=_hold, args=(path, start, length, excl, block, child))
        self.proc.start()

    def outcome(self, timeout):
        """("ok" | errno name, when) once the request is answered; None before `timeout`."""
        return self.conn.recv() if self.conn.poll(timeout) else None

    def release(self):
        self.conn.send("go")
        r = self.outcome(60)
        self.proc.join(10)
        return r

    def kill(self):
        self.proc.kill()
        self.proc.join(10)


REFUSED = ("EAGAIN", "EACCES")


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


def got(h, timeout=60):
    r = h.outcome(timeout)
    expect(r is not None, f"no answer to a lock request in {timeout} s")
    return r[0]


def case_conflict(v3, v3b, v4):
    a = Holder(v3, 0, 100)
    expect(got(a) == "ok", "v3 lock of 0-99 refused")
    try:
        b = Holder(v3, 50, 10)
        r = got(b)
        expect(r in REFUSED, f"second v3 process over it: {r}")
        b2 = Holder(v3b, 50, 10)
        r = got(b2)
        expect(r in REFUSED, f"v3 process of the second mount (another client) over it: {r}")
        c = Holder(v4, 50, 10)
        r = got(c)
        expect(r in REFUSED, f"v4 process over it: {r}")
        d = Holder(v3, 100, 10)
        r = got(d)
        expect(r == "ok", f"v3 lock of 100-109 beside it: {r}")
        d.release()
    finally:
        a.release()


def case_v4holds(v3, v4):
    h = Holder(v4, 0, 10)
    expect(got(h) == "ok", "v4 lock refused")
    b = Holder(v3, 5, 1)
    r = got(b)
    h.release()
    expect(r in REFUSED, f"v3 request over the v4 lock: {r}")
    b2 = Holder(v3, 5, 1)
    r = got(b2)
    expect(r == "ok", f"v3 request after the v4 unlock: {r}")
    b2.release()


def wait_for_grant(holder_path, waiter_path, what, limit=10):
    a = Holder(holder_path, 0, 1)
    expect(got(a) == "ok", f"{what}: holder refused")
    w = Holder(waiter_path, 0, 1, block=True)
    expect(w.outcome(3) is None, f"{what}: the blocked request was answered while held")
    t0 = time.time()
    a.release()
    r = w.outcome(40)
    if r is None:
        w.kill()
        raise Failed(f"{what}: blocked request not granted 40 s after the unlock")
    expect(r[0] == "ok", f"{what}: blocked request ended with {r[0]}")
    took = r[1] - t0
    w.release()
    expect(took < limit, f"{what}: granted {took:.1f} s after the unlock (a client retry, not a call back)")
    return took


def case_block(v3, v3b, v4, limit):
    for holder, what in ((v3b, "v3 holder on the second mount"), (v4, "v4 holder")):
        took = wait_for_grant(holder, v3, what, limit)
        print(f"block: granted {took:.1f} s after the {what}'s unlock", flush=True)


def _count(path, n, conn):
    fd = os.open(path, os.O_RDWR)
    for _ in range(n):
        fcntl.lockf(fd, fcntl.LOCK_EX, 0, 0)
        v = int(os.pread(fd, 32, 0).split(b"\0")[0] or b"0")
        os.pwrite(fd, str(v + 1).encode().ljust(32, b"\0"), 0)
        fcntl.lockf(fd, fcntl.LOCK_UN, 0, 0)
    os.close(fd)
    conn.send("done")


def case_counter(v3, v3b, v4, total):
    for p in (v3,):
        with open(p, "r+b") as f:
            f.write(b"0".ljust(32, b"\0"))
    paths = [v3, v3, v3b, v4]
    each = total // len(paths)
    procs = []
    for p in paths:
        parent, child = mp.Pipe()
        proc = mp.Process(target=_count, args=(p, each, child))
        proc.start()
        procs.append((proc, parent))
    for proc, parent in procs:
        if not parent.poll(600):
            for q, _ in procs:
                q.kill()
            raise Failed("a counting process did not finish in 600 s")
        parent.recv()
        proc.join(10)
        expect(proc.exitcode == 0, f"a counting process exited {proc.exitcode}")
    with open(v4, "rb") as f:
        final = int(f.read(32).split(b"\0")[0])
    expect(final == each * len(paths), f"counter {final}, expected {each * len(paths)}")


def case_reclaim(v3, v4, restart):
    a = Holder(v3, 0, 10)
    expect(got(a) == "ok", "v3 lock refused")
    try:
        out = subprocess.run(restart, shell=True, capture_output=True, text=True, timeout=120)
        expect(out.returncode == 0, f"restart failed: {out.stdout} {out.stderr}")
        # The request waits out the grace period (the client retries) and is then refused,
        # if the holder's lock was reclaimed.
        b = Holder(v3, 0, 1)
        r = got(b, 120)
        expect(r in REFUSED, f"another process after the restart: {r} (the lock was not reclaimed)")
    finally:
        r = a.release()
    expect(r is not None and r[0] == "released", f"the holder's unlock after the restart: {r}")
    c = Holder(v3, 0, 1)
    r = got(c)
    expect(r == "ok", f"after the holder's unlock: {r}")
    c.release()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--v3", required=True, help="directory on the NFSv3 mount")
    ap.add_argument("--v3b", required=True,
                    help="the same directory on a second NFSv3 mount (another server address)")
    ap.add_argument("--v4", required=True, help="the same directory on the NFSv4 mount")
    ap.add_argument("--increments", type=int, default=2000, help="counter case: in all")
    ap.add_argument("--restart-cmd", help="crashes and restarts the server")
    ap.add_argument("--wakeup", type=float, default=2,
                    help="seconds within which an unlock must grant a blocked v3 request")
    a = ap.parse_args()
    name = "locked"
    with open(os.path.join(a.v3, name), "wb") as f:
        f.write(b"\0" * 4096)
    v3, v4 = os.path.join(a.v3, name), os.path.join(a.v4, name)
    v3b = os.path.join(a.v3b, name)
    cases = [("conflict", lambda: case_conflict(v3, v3b, v4)),
             ("v4holds", lambda: case_v4holds(v3, v4)),
             ("block", lambda: case_block(v3, v3b, v4, a.wakeup)),
             ("counter", lambda: case_counter(v3, v3b, v4, a.increments))]
    if a.restart_cmd:
        cases.append(("reclaim", lambda: case_reclaim(v3, v4, a.restart_cmd)))
    failed = 0
    for n, fn in cases:
        t0 = time.time()
        try:
            fn()
            st, why = "PASS", "-"
        except Failed as e:
            st, why = "FAIL", str(e)
            failed += 1
        except Exception as e:  # a case that crashed is a failure with its cause
            st, why = "FAIL", f"{type(e).__name__}: {e}"
            failed += 1
        print(f"sub={n} status={st} time={time.time() - t0:.2f} reason={why}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    mp.set_start_method("fork")
    sys.exit(main())
