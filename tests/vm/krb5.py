#!/usr/bin/env python3
"""Kerberos (RPCSEC_GSS) checks on one mount made with sec=krb5, krb5i or krb5p, for the "krb5"
case of tests/vm/run. Runs as root; each step runs in a child process that has become the
user (setgroups, setgid, setuid), so the kernel client asks rpc.gssd for that uid's
credentials (it finds the ticket cache /tmp/krb5cc_UID the harness made with kinit).

  own       each user with a ticket (--user) makes a directory (0755) and in it a small file
            (0644) and a --big-mib file written in 1 MiB blocks with fsync; renames the small
            file and lists the directory. The server records the user's uid and gid, as
            seen after dropping caches (so from a GETATTR)
  read      after dropping caches each user reads back their files (sha256)
  cross     the second user may read the first's 0644 file but not write it, nor create a file
            in the first's 0755 directory, nor read the file once it is 0600 (EACCES): the
            server checks permissions as the user the principal maps to
  noticket  a user without a ticket (--noticket) is refused (EACCES or EKEYEXPIRED) listing
            the first user's 0755 directory, reading their 0644 file and creating a file in
            the mount's directory. (Listing the mount's root itself fails with ESTALE: the
            client revalidates a mount root with d_weak_revalidate, and the VFS turns any
            failure of that, here the refused GETATTR, into ESTALE; knfsd shows the same)
  lock      the first user takes a write lock on the first 4 KiB of their big file (NLM for
            NFSv3, whose calls the Linux client sends with AUTH_SYS whatever the mount's
            flavor; NFSv4 LOCK under the mount's), and another process of theirs is refused
            the same range (EAGAIN or EACCES) until it is unlocked. --no-lock WHY reports the
            step SKIP with WHY instead (the harness's NFSv3-over-RDMA rnfsd, whose NLM the
            client's lockd cannot reach: see tests/vm/guest.sh)
  root      root (rpc.gssd sends the machine credential, host/CLIENT) creates a file: it is
            owned by --anon-uid (a principal that maps to no local user is the anonymous user)
  workload  only with --workload CASES: each user runs tests/vm/workload.py's CASES as
            themselves (setpriv) in a directory of their own on the mount (their files owned
            by their principal's uid; caches are not dropped, which needs root); every case
            must pass or skip
  perf      only with --perf-mib: the perf case's figures (workload.py's perf_once: dd write
            with fsync, dd read after dropping caches, fio 4 KiB random reads, the server's CPU
            per MB) as the first user, --perf-runs rounds, printed as a PERF line; the harness
            runs it on both servers so that each flavor compares side by side; with --profile
            also workload.py's profile case (perf record of the guest) as root
  cleanup   every file and directory made is removed; the mount's directory is as before

Prints one "sub=NAME status=PASS|FAIL|SKIP time=SECS reason=TEXT" line per step; exit status 1
when any failed.
"""
import argparse
import errno
import fcntl
import hashlib
import os
import random
import sys
import time

from asuser import Failed, as_user, drop_caches, ename, try_errno

MIB = 1 << 20


def expect(cond, what):
    if not cond:
        raise Failed(what)


def block(seed, i):
    return random.Random(f"{seed}-{i}").randbytes(MIB)


# --- steps run as a user ---------------------------------------------------------------------

def u_own(d, name, big_mib, seed):
    os.mkdir(d, 0o755)
    small = os.path.join(d, "small.tmp")
    with open(small, "wb") as f:
        f.write(f"hello from {name}\n".encode())
    os.chmod(small, 0o644)
    os.rename(small, os.path.join(d, "small"))
    h = hashlib.sha256()
    fd = os.open(os.path.join(d, "big"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for i in range(big_mib):
            b = block(seed, i)
            h.update(b)
            view = memoryview(b)
            while view:
                n = os.write(fd, view)
                expect(n > 0, "write returned 0")
                view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    names = sorted(os.listdir(d))
    expect(names == ["big", "small"], f"listing of {d}: {names}")
    return h.hexdigest()


def u_read(d, name, big_mib):
    out = {}
    for n in ("small", "big"):
        st = os.stat(os.path.join(d, n))
        out[n] = [st.st_uid, st.st_gid, st.st_size]
    st = os.stat(d)
    out["dir"] = [st.st_uid, st.st_gid, 0]
    with open(os.path.join(d, "small"), "rb") as f:
        expect(f.read() == f"hello from {name}\n".encode(), "small: content differs")
    h = hashlib.sha256()
    with open(os.path.join(d, "big"), "rb") as f:
        while True:
            b = f.read(777_777)
            if not b:
                break
            h.update(b)
    out["sha"] = h.hexdigest()
    return out


def u_cross(d, owner_name):
    got = {}
    with open(os.path.join(d, "small"), "rb") as f:
        expect(f.read() == f"hello from {owner_name}\n".encode(), "reading another's file: content differs")
    got["write"] = try_errno(lambda: os.close(os.open(os.path.join(d, "small"), os.O_WRONLY)))
    got["create"] = try_errno(
        lambda: os.close(os.open(os.path.join(d, "intruder"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)))
    return got


def u_lock(d):
    path = os.path.join(d, "big")
    fd = os.open(path, os.O_RDWR)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 4096, 0)
        except OSError as e:
            return {"lock": ename(e.errno)}
        pid = os.fork()
        if pid == 0:
            fd2 = os.open(path, os.O_RDWR)
            try:
                fcntl.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 4096, 0)
                os._exit(1)
            except OSError as e:
                os._exit(0 if e.errno in (errno.EAGAIN, errno.EACCES) else 2)
        _, st = os.waitpid(pid, 0)
        fcntl.lockf(fd, fcntl.LOCK_UN, 4096, 0)
        return {"lock": None, "other": os.waitstatus_to_exitcode(st)}
    finally:
        os.close(fd)


def u_read_errno(path):
    return try_errno(lambda: open(path, "rb").close())


def u_chmod(path, mode):
    os.chmod(path, mode)
    return None


def u_noticket(top, d, tag):
    return {"list": try_errno(lambda: os.listdir(d)),
            "read": try_errno(lambda: open(os.path.join(d, "big"), "rb").close()),
            "create": try_errno(lambda: os.close(os.open(
                os.path.join(top, f"noticket-{tag}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)))}


def u_rmtree(d):
    import shutil
    shutil.rmtree(d)  # a case the workload skips leaves its (empty) directory
    return None


def u_cleanup(d):
    for n in os.listdir(d):
        os.unlink(os.path.join(d, n))
    os.rmdir(d)
    return None


def parse_user(s):
    name, uid, gid = s.split(":")
    return (name, int(uid), int(gid))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="the mount (or a directory on it)")
    ap.add_argument("--tag", required=True, help="names this run's files (e.g. 4.2-krb5p)")
    ap.add_argument("--user", action="append", type=parse_user, required=True,
                    help="NAME:UID:GID of a user with a ticket (two or more)")
    ap.add_argument("--noticket", type=parse_user, help="NAME:UID:GID of a user without one")
    ap.add_argument("--anon-uid", type=int, default=65534)
    ap.add_argument("--big-mib", type=int, default=4)
    ap.add_argument("--seed", default="krb5")
    ap.add_argument("--perf-mib", type=int, default=0, help="MiB for the perf step (0: no step)")
    ap.add_argument("--perf-runs", type=int, default=3)
    ap.add_argument("--no-lock", metavar="WHY",
                    help="the lock step cannot reach the server's lock manager: report it SKIP")
    ap.add_argument("--workload", default="",
                    help="workload.py cases each user runs on the mount as themselves (none: no step)")
    ap.add_argument("--workload-args", default="", help="more workload.py arguments (sizes)")
    ap.add_argument("--profile", action="store_true",
                    help="with --perf-mib: also workload.py's profile case as root (a figure)")
    ap.add_argument("--metrics-url", help="rnfsd's Prometheus endpoint (none: knfsd's threads)")
    a = ap.parse_args()
    expect(len(a.user) >= 2, "two users with tickets are needed")
    top = a.dir
    dirs = {u[0]: os.path.join(top, f"{a.tag}-{u[0]}") for u in a.user}
    rootfile = os.path.join(top, f"{a.tag}-root")
    before = sorted(os.listdir(top))
    shas = {}
    failed = 0

    def own():
        for u in a.user:
            shas[u[0]] = as_user(u, u_own, dirs[u[0]], u[0], a.big_mib, f"{a.seed}-{u[0]}")

    def read():
        drop_caches()
        for u in a.user:
            got = as_user(u, u_read, dirs[u[0]], u[0], a.big_mib)
            for n in ("dir", "small", "big"):
                uid, gid, _ = got[n]
                expect((uid, gid) == (u[1], u[2]),
                       f"{u[0]}'s {n} is owned by {uid}:{gid}, not {u[1]}:{u[2]}")
            expect(got["big"][2] == a.big_mib * MIB, f"{u[0]}'s big file has {got['big'][2]} bytes")
            expect(got["sha"] == shas.get(u[0]), f"{u[0]}'s big file reads back different")

    def cross():
        owner, other = a.user[0], a.user[1]
        got = as_user(other, u_cross, dirs[owner[0]], owner[0])
        expect(got["write"] in ("EACCES", "EPERM"),
               f"{other[0]} opening {owner[0]}'s 0644 file for writing: {got['write'] or 'allowed'}")
        expect(got["create"] in ("EACCES", "EPERM"),
               f"{other[0]} creating in {owner[0]}'s 0755 directory: {got['create'] or 'allowed'}")
        small = os.path.join(dirs[owner[0]], "small")
        as_user(owner, u_chmod, small, 0o600)
        drop_caches()
        e = as_user(other, u_read_errno, small)
        expect(e in ("EACCES", "EPERM"), f"{other[0]} reading {owner[0]}'s 0600 file: {e or 'allowed'}")
        e = as_user(owner, u_read_errno, small)
        expect(e is None, f"{owner[0]} reading their own 0600 file: {e}")

    def noticket():
        if not a.noticket:
            return
        owner = a.user[0]
        got = as_user(a.noticket, u_noticket, top, dirs[owner[0]], a.tag)
        ok = ("EACCES", "EKEYEXPIRED", "EPERM")
        bad = [f"{k} {got[k] or 'allowed'}" for k in ("list", "read", "create") if got[k] not in ok]
        expect(not bad, f"{a.noticket[0]} (no ticket) listing {owner[0]}'s directory, reading "
               f"{owner[0]}'s 0644 file, creating a file: {', '.join(bad)} (want EACCES or EKEYEXPIRED)")

    def lock():
        owner = a.user[0]
        got = as_user(owner, u_lock, dirs[owner[0]])
        expect(got["lock"] is None, f"{owner[0]} locking their file: {got['lock']}")
        expect(got["other"] == 0, f"another process of {owner[0]} locking the same range: "
               + {1: "granted", 2: "an error other than EAGAIN/EACCES"}.get(got["other"], "?"))

    def root():
        with open(rootfile, "wb") as f:
            f.write(b"root\n")
        drop_caches()
        st = os.stat(rootfile)
        expect(st.st_uid == a.anon_uid,
               f"root's file (machine credential) is owned by {st.st_uid}:{st.st_gid}, not {a.anon_uid}")

    def cleanup():
        errs = []
        for u in a.user:
            if os.path.isdir(dirs[u[0]]):
                try:
                    as_user(u, u_cleanup, dirs[u[0]])
                except Failed as e:
                    errs.append(str(e))
        if os.path.exists(rootfile):
            try:
                os.unlink(rootfile)
            except OSError as e:
                errs.append(f"removing root's file: {ename(e.errno)}")
        after = sorted(os.listdir(top))
        expect(not errs, "; ".join(errs))
        expect(after == before, f"left behind: {sorted(set(after) - set(before))}")

    def workload():
        import shlex
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        bad = []
        for u in a.user:
            wl = os.path.join(dirs[u[0]], "wl")
            cmd = ["setpriv", f"--reuid={u[1]}", f"--regid={u[2]}", "--clear-groups",
                   sys.executable, os.path.join(here, "workload.py"), "--dir", wl,
                   "--label", f"krb5 {a.tag} user={u[0]}", "--cases", a.workload,
                   "--seed", str(int(hashlib.sha256(f"{a.seed}-{u[0]}".encode()).hexdigest()[:6], 16))]
            cmd += shlex.split(a.workload_args)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=3000)
            results = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
            for x in results:
                print(x, flush=True)
                if "status=FAIL" in x:
                    bad.append(f"{u[0]} {x.split('case=')[1]}")
            if r.returncode != 0:
                # the workload's own log (tracebacks of unexpected errors) as evidence
                for x in r.stderr.strip().splitlines()[-25:]:
                    print(f"workload {u[0]}| {x}", flush=True)
                if not bad:
                    bad.append(f"{u[0]}: workload.py exited {r.returncode}")
            if os.path.isdir(wl):
                as_user(u, u_rmtree, wl)
        expect(not bad, "; ".join(bad))

    def perf():
        import workload  # tests/vm/workload.py, beside this file
        u = a.user[0]
        setpriv = ["setpriv", f"--reuid={u[1]}", f"--regid={u[2]}", "--clear-groups"]
        path = os.path.join(dirs[u[0]], "perf")
        rounds = [workload.perf_once(path, a, setpriv) for _ in range(max(1, a.perf_runs))]
        print(f"PERF {a.tag}: {workload.figures_text(rounds)}", flush=True)
        if a.profile:  # as root, under the machine credential: the profile's files are anon's
            a.label = f"{a.tag}"
            workload.case_profile(top, a)

    steps = [("own", own), ("read", read), ("cross", cross), ("noticket", noticket),
             ("lock", lock), ("root", root)]
    if a.workload:
        steps.append(("workload", workload))
    if a.perf_mib > 0:
        steps.append(("perf", perf))
    steps.append(("cleanup", cleanup))
    for n, fn in steps:
        t0 = time.time()
        if n == "lock" and a.no_lock:
            st, why = "SKIP", a.no_lock
        elif n in ("read", "cross", "lock", "perf") and len(shas) < len(a.user):
            st, why = "FAIL", "not run: own failed"
            failed += 1
        else:
            try:
                fn()
                st, why = "PASS", "-"
            except Failed as e:
                st, why = "FAIL", str(e)
                failed += 1
            except OSError as e:
                st, why = "FAIL", f"{e.strerror} ({ename(e.errno)}) at {e.filename}"
                failed += 1
            except Exception as e:  # noqa: BLE001 - a step that crashed fails with its cause
                st, why = "FAIL", f"{type(e).__name__}: {e}"
                failed += 1
        print(f"sub={n} status={st} time={time.time() - t0:.2f} reason={why}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
