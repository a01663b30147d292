#!/usr/bin/env python3
"""The krb5cb row of tests/vm/run's krb5 case: NFSv4.0 callbacks under RPCSEC_GSS with the
Linux client. The harness mounts the server with vers=4.0,sec=krb5i (the client introduces
itself with its machine credential, and its callback service, through rpc.svcgssd, accepts
contexts for that principal) and the same export with vers=3,sec=krb5i; then, as --user:

  open      the user opens a file of the NFSv4.0 mount for reading and holds it open: the
            server delegates it only with the callback path up, and it is up only once the
            server's CB_NULL came under a context the client's service accepted (rnfsd: its
            delegations gauge; knfsd: a "deleg" in /proc/fs/nfsd/clients/*/states). The
            server checks the path after SETCLIENTID_CONFIRM, on its own time: an OPEN that
            comes first gets no delegation, so the holder closes and opens again, for up to
            --cb-wait seconds, until one is delegated
  recall    the user writes the file through the NFSv3 mount: the server recalls the
            delegation (CB_RECALL under the same context; the client answers it and returns
            the delegation, which it no longer holds while the file is still open), so the
            write completes well within a lease (a server whose recall went unanswered would
            wait for the lease, 15 s in the guest)
  read      after the holder closed it, the NFSv4.0 mount reads the new content

Prints one "sub=NAME status=PASS|FAIL time=SECS reason=TEXT" line per step; exit status 1 when
any failed.
"""
import argparse
import glob
import os
import sys
import time
import urllib.request

from asuser import Failed, as_user


def metric(url, name):
    """The value of metric `name` (with its labels) at `url`, 0 when absent."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def knfsd_delegations():
    """How many delegations knfsd's clients hold (its per-client states files)."""
    n = 0
    for f in glob.glob("/proc/fs/nfsd/clients/*/states"):
        try:
            with open(f) as s:
                n += s.read().count("type: deleg")
        except OSError:
            pass
    return n


def u_write(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def u_timed_write(path, data):
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.monotonic() - t0


def u_read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


def hold_open(user, path):
    """A child that is `user` opens `path` for reading, reads it, and holds it open until the
    returned pipe is written; returns (pid, that pipe's fd, what it read or why not)."""
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(go_w)
        try:
            os.setgroups([])
            os.setgid(user[2])
            os.setuid(user[1])
            fd = os.open(path, os.O_RDONLY)
            msg = "read:" + os.read(fd, 100).decode(errors="replace")
        except OSError as e:
            msg = f"fail:{e}"
            fd = None
        os.write(w, msg.encode())
        os.close(w)
        os.read(go_r, 1)
        if fd is not None:
            os.close(fd)
        os._exit(0)
    os.close(w)
    os.close(go_r)
    msg = os.read(r, 200).decode()
    os.close(r)
    return pid, go_w, msg


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--v4", required=True, help="the vers=4.0,sec=krb5i mount")
    p.add_argument("--v3", required=True, help="the vers=3,sec=krb5i mount of the same export")
    p.add_argument("--sub", default="", help="the export's directory under the v4 mount")
    p.add_argument("--user", required=True, help="name:uid:gid with a ticket")
    p.add_argument("--server", required=True, choices=["knfsd", "rnfsd"])
    p.add_argument("--metrics-url", default="")
    p.add_argument("--cb-wait", type=float, default=20,
                   help="seconds to open the file again until the server delegates it")
    a = p.parse_args()
    name, uid, gid = a.user.split(":")
    user = (name, int(uid), int(gid))
    fails = 0

    def step(sub, t0, why):
        nonlocal fails
        status = "FAIL" if why else "PASS"
        fails += bool(why)
        print(f"sub={sub} status={status} time={time.monotonic() - t0:.2f} reason={why or '-'}",
              flush=True)

    d4 = os.path.join(a.v4, a.sub)
    p4, p3 = os.path.join(d4, "cb-file"), os.path.join(a.v3, "cb-file")
    t0 = time.monotonic()
    try:
        as_user(user, u_write, p4, b"before\n")
    except Failed as e:
        step("open", t0, f"cannot write the file: {e}")
        return 1
    def delegations():
        if a.server == "rnfsd":
            return metric(a.metrics_url, 'rnfs_nfs4_state{kind="delegations"}')
        return knfsd_delegations()

    opens = 0
    while True:
        pid, go, got = hold_open(user, p4)
        opens += 1
        why = None if got == "read:before\n" else f"the holder read {got!r}"
        held = 0
        for _ in range(20):  # the delegation comes with the OPEN; its count a moment later
            held = delegations()
            if held >= 1:
                break
            time.sleep(0.1)
        if held >= 1 or why or time.monotonic() - t0 > a.cb_wait:
            break
        os.write(go, b"x")
        os.close(go)
        os.waitpid(pid, 0)
        time.sleep(0.5)
    try:
        if why is None and held < 1:
            why = (f"no delegation in {opens} opens over {time.monotonic() - t0:.1f} s: "
                   "the callback path under RPCSEC_GSS is not up")
        print(f"delegations held after open {opens} "
              f"({time.monotonic() - t0:.1f} s after the mount): {held:.0f}", flush=True)
        step("open", t0, why)
        t0 = time.monotonic()
        try:
            dt = as_user(user, u_timed_write, p3, b"after\n")
            print(f"NFSv3 write of the delegated file took {dt:.1f} s", flush=True)
            why = None if dt < 12 else f"the write waited {dt:.1f} s: the recall went unanswered"
            # the client answered the recall and returned the delegation, the file still open
            for _ in range(50):
                held = delegations()
                if held == 0:
                    break
                time.sleep(0.1)
            print(f"delegations held after the write: {held:.0f}", flush=True)
            if why is None and held != 0:
                why = "the delegation was not returned: the recall went unanswered"
        except Failed as e:
            why = f"NFSv3 write: {e}"
        step("recall", t0, why)
    finally:
        os.write(go, b"x")
        os.close(go)
        os.waitpid(pid, 0)
    t0 = time.monotonic()
    try:
        got = as_user(user, u_read, p4)
        why = None if got == "after\n" else f"the NFSv4.0 mount reads {got!r}"
        as_user(user, os.unlink, p4)
    except Failed as e:
        why = str(e)
    step("read", t0, why)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
