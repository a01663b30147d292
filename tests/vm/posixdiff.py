#!/usr/bin/env python3
"""Differential POSIX test: the same sequence of system calls on two directories, compared.

One directory is the reference (a local file system, tmpfs in the guest), the other is on the
NFS mount under test. Every step runs in a forked child with the step's identity (root; user A:
uid 1001, gid 1001, supplementary group 2000; user B: uid 1002, gid 1002, no supplementary
groups) and umask, first on the local directory, then on the NFS one. Per step the two sides
must agree on
  * the result of every call in it: success (a write's count, a readlink's text) or the errno;
  * for each object the step touched, from statx(AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC) as
    root (FORCE_SYNC makes the NFS client ask the server instead of its attribute cache): the
    whole st_mode (type, set-id and sticky bits), uid, gid, nlink, size (regular files and
    symlinks) and each of atime, mtime and ctime as its relation to the step: "same" (unchanged
    since this side last looked at the object), "now" (within TOLERANCE_NS, 5 s, of the step's wall
    time), "set:SEC.NSEC" (one of the explicit utimensat values), "changed" or "old".
Inode numbers, st_dev, st_blocks and directory sizes are not compared. Symlinks' atime is not
compared (every path walk through one touches it locally, the NFS client does not tell the
server), nor the atime after a step that reads (readlink).

A few differences every NFS server shows with the Linux client are listed in KNOWN with the
reason; they are reported as expected, not as failures.

By hand (as root; each DIR gets a subdirectory "px" that is removed at the end):
    python3 tests/vm/posixdiff.py --local /tmp/ref --nfs /mnt/nfs/x [--show]
prints every difference (with --show every step's local record too) and the number of
compared calls; exit status 1 when a difference outside KNOWN was found. tests/vm/workload.py
runs it as the case `posix`.
"""

import argparse
import ctypes
import errno
import json
import os
import shutil
import stat
import sys
import time

UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_STATX_FORCE_SYNC = 0x2000
STATX_BASIC_STATS = 0x7FF
TOLERANCE_NS = 5 * 10**9  # "now": within 5 s of the step's wall time
GAP = 0.01  # seconds between two steps on a side: more than a jiffy, so a change shows in times
WORKDIR = "px"


class User:
    def __init__(self, name, uid, gid, groups):
        self.name, self.uid, self.gid, self.groups = name, uid, gid, tuple(groups)

    def __str__(self):
        return self.name


ROOT = User("root", 0, 0, ())
A = User("A", 1001, 1001, (2000,))
B = User("B", 1002, 1002, ())
G_A = 2000  # A's supplementary group
G_NONE = 3000  # nobody's group

# explicit utimensat values (sec, nsec): a time equal to one of them is reported by its value
T1 = (1_000_000_001, 111_111_111)
T2 = (1_100_000_002, 222_222_222)
T3 = (1_200_000_003, 333_333_333)
T4 = (1_300_000_004, 0)
T5 = (1_400_000_005, 500_000_000)
T6 = (1_500_000_006, 6)
T7 = (1_600_000_007, 777_777_777)
NOW = (0, UTIME_NOW)
OMIT = (0, UTIME_OMIT)
EXPLICIT_NS = {s * 10**9 + n for s, n in (T1, T2, T3, T4, T5, T6, T7)}

# Differences every NFS server shows with the Linux client, by the key a step names in
# Step.known: (reason, predicate on (local record, NFS record)). Only a difference that the
# predicate accepts is expected; any other difference in the same step is not.


def _only_fields(loc, nfs, ok):
    """Whether every field that differs passes ok(key, local value, NFS value)."""
    keys = [k for k in list(loc) + [k for k in nfs if k not in loc] if loc.get(k) != nfs.get(k)]
    return all(k in loc and k in nfs and ok(k, loc[k], nfs[k]) for k in keys)


def _silly(loc, nfs):
    return (loc.get("result", "").endswith("nlink:0 entries:- close:ok")
            and nfs.get("result", "").endswith("nlink:1 entries:.nfs* close:ok")
            and _only_fields(loc, nfs, lambda k, a, b: k == "result"))


def _setid_kept(loc, nfs):
    return _only_fields(loc, nfs, lambda k, a, b: k.endswith(" mode") and int(a, 8) == int(b, 8)
                        & ~(stat.S_ISUID | stat.S_ISGID))


KNOWN = {
    "silly-rename": (
        "silly rename: the Linux NFS client renames a file unlinked while still open to "
        ".nfsXXXX and removes it at the last close, so the open file keeps nlink 1 and the "
        "directory lists the .nfs name until then (every NFS server sees the same calls)",
        _silly),
    "setid-size": (
        "set-id bits after a size change by a non-root user (truncate, ftruncate, O_TRUNC): "
        "Linux clears them locally, but the Linux NFS client leaves that to the server "
        "(nfs_setattr drops the mode change that only clears S_ISUID/S_ISGID) and no NFS "
        "version asks a server to clear them on a SETATTR of the size; knfsd keeps them, "
        "rnfsd clears them as a local file system does (and so shows no difference)",
        _setid_kept),
}


# ---------------------------------------------------------------------------------------------
# system calls Python's os module does not have (utimensat with UTIME_NOW/UTIME_OMIT, statx)

_libc = ctypes.CDLL(None, use_errno=True)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _StatxTs(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_int64), ("tv_nsec", ctypes.c_uint32),
                ("reserved", ctypes.c_int32)]


class _Statx(ctypes.Structure):
    _fields_ = [("mask", ctypes.c_uint32), ("blksize", ctypes.c_uint32),
                ("attributes", ctypes.c_uint64), ("nlink", ctypes.c_uint32),
                ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32), ("mode", ctypes.c_uint16),
                ("spare0", ctypes.c_uint16), ("ino", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("blocks", ctypes.c_uint64), ("attributes_mask", ctypes.c_uint64),
                ("atime", _StatxTs), ("btime", _StatxTs), ("ctime", _StatxTs),
                ("mtime", _StatxTs), ("rest", ctypes.c_uint8 * 256)]


def _oserror(path):
    e = ctypes.get_errno()
    return OSError(e, os.strerror(e), path)


def utimensat(path, atime, mtime, nofollow=False):
    """utimensat(AT_FDCWD, path, {atime, mtime}, flags); times as (sec, nsec), NOW or OMIT."""
    ts = (_Timespec * 2)(_Timespec(*atime), _Timespec(*mtime))
    flags = AT_SYMLINK_NOFOLLOW if nofollow else 0
    if _libc.utimensat(AT_FDCWD, os.fsencode(path), ts, flags) != 0:
        raise _oserror(path)


class Stat:
    """What a snapshot keeps of statx: the compared fields and the times in ns."""

    def __init__(self, mode, uid, gid, nlink, size, ino, atime, mtime, ctime):
        self.mode, self.uid, self.gid, self.nlink, self.size = mode, uid, gid, nlink, size
        self.ino, self.atime, self.mtime, self.ctime = ino, atime, mtime, ctime


def fresh_stat(path):
    """statx(AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC): the NFS client revalidates with the
    server rather than answer from its attribute cache; a local file system ignores the flag."""
    if hasattr(_libc, "statx"):
        st = _Statx()
        if _libc.statx(AT_FDCWD, os.fsencode(path), AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC,
                       STATX_BASIC_STATS, ctypes.byref(st)) != 0:
            raise _oserror(path)
        ns = lambda t: t.tv_sec * 10**9 + t.tv_nsec
        return Stat(st.mode, st.uid, st.gid, st.nlink, st.size, st.ino, ns(st.atime),
                    ns(st.mtime), ns(st.ctime))
    st = os.lstat(path)  # no statx in the C library: attributes may come from the cache
    return Stat(st.st_mode, st.st_uid, st.st_gid, st.st_nlink, st.st_size, st.st_ino,
                st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)


# ---------------------------------------------------------------------------------------------
# steps: fn(res, p) runs in the child; p(rel) is the side's path of rel; every call appends
# "what:result" to res, and the first failing call ends the step


class _Stop(Exception):
    pass


def errname(e):
    return errno.errorcode.get(e, str(e))


def _call(res, what, fn, *args, show=True):
    try:
        v = fn(*args)
    except OSError as e:
        res.append(f"{what}:{errname(e.errno)}")
        raise _Stop() from None
    res.append(f"{what}:{v if show and v is not None else 'ok'}")
    return v


def _with_fd(res, path, flags, body=None, mode=0o666):
    fd = _call(res, "open", os.open, path, flags, mode, show=False)
    try:
        if body:
            body(fd)
    finally:
        _call(res, "close", os.close, fd)


def op_create(rel, mode=0o666, flags=os.O_CREAT | os.O_EXCL | os.O_WRONLY, data=b""):
    def fn(res, p):
        _with_fd(res, p(rel), flags, data and (lambda fd: _call(res, "write", os.write, fd, data)),
                 mode)
    return fn


def op_open(rel, flags):
    return lambda res, p: _with_fd(res, p(rel), flags)


def op_open_each(rel, modes):
    """open + close with each (flags, name) in turn, each reported whether or not the one
    before it failed."""
    def fn(res, p):
        for flags, name in modes:
            try:
                fd = _call(res, name, os.open, p(rel), flags, show=False)
                _call(res, "close", os.close, fd)
            except _Stop:
                pass
    return fn


def op_seq(*fns):
    """Several operations in one step, until the first failing call."""
    def fn(res, p):
        for f in fns:
            f(res, p)
    return fn


def op_write1(rel, flags=os.O_WRONLY):
    return lambda res, p: _with_fd(res, p(rel), flags,
                                   lambda fd: _call(res, "write", os.write, fd, b"w"))


def op_truncate(rel, size):
    return lambda res, p: _call(res, "truncate", os.truncate, p(rel), size)


def op_ftruncate(rel, size):
    return lambda res, p: _with_fd(res, p(rel), os.O_WRONLY,
                                   lambda fd: _call(res, "ftruncate", os.ftruncate, fd, size))


def op_chmod(rel, mode):
    return lambda res, p: _call(res, "chmod", os.chmod, p(rel), mode)


def op_chown(rel, uid, gid, follow=True):
    return lambda res, p: _call(res, "chown",
                                lambda: os.chown(p(rel), uid, gid, follow_symlinks=follow))


def op_utimens(rel, atime, mtime, nofollow=False):
    return lambda res, p: _call(res, "utimensat", utimensat, p(rel), atime, mtime, nofollow)


def op_link(src, dst):
    return lambda res, p: _call(res, "link", os.link, p(src), p(dst))


def op_rename(src, dst):
    return lambda res, p: _call(res, "rename", os.rename, p(src), p(dst))


def op_unlink(rel):
    return lambda res, p: _call(res, "unlink", os.unlink, p(rel))


def op_mkdir(rel, mode=0o777):
    return lambda res, p: _call(res, "mkdir", os.mkdir, p(rel), mode)


def op_rmdir(rel):
    return lambda res, p: _call(res, "rmdir", os.rmdir, p(rel))


def op_symlink(target, rel):
    return lambda res, p: _call(res, "symlink", os.symlink, target, p(rel))


def op_readlink(rel):
    return lambda res, p: _call(res, "readlink", os.readlink, p(rel))


def op_mkfifo(rel, mode=0o666):
    return lambda res, p: _call(res, "mkfifo", os.mkfifo, p(rel), mode)


def op_silly(rel):
    """A file unlinked while this process holds it open (see KNOWN); after the close, waits up
    to 10 s until the NFS client's removal of the .nfs name is through (not compared)."""
    def fn(res, p):
        d = os.path.dirname(p(rel))
        fd = _call(res, "open", os.open, p(rel), os.O_RDWR, show=False)
        try:
            _call(res, "unlink", os.unlink, p(rel))
            res.append(f"nlink:{os.fstat(fd).st_nlink}")
            names = os.listdir(d)
            res.append("entries:" + (",".join(".nfs*" if n.startswith(".nfs") else n
                                              for n in sorted(names)) or "-"))
        finally:
            _call(res, "close", os.close, fd)
        deadline = time.monotonic() + 10
        while os.listdir(d) and time.monotonic() < deadline:
            time.sleep(0.05)
    return fn


class Step:
    def __init__(self, name, who, fn, snap, umask=0o022, noatime=False, known=None):
        self.name, self.who, self.fn, self.snap = name, who, fn, list(snap)
        self.umask, self.noatime, self.known = umask, noatime, known


def _parents(rels):
    """The objects and their directories ("" is the work directory), each once."""
    out = []
    for r in rels:
        for x in (r, os.path.dirname(r)):
            if x not in out:
                out.append(x)
    return out


class Plan:
    """The sequence of steps, built with one method per kind of call; `snap` defaults to the
    objects the call names and their directories."""

    def __init__(self):
        self.steps = []

    def add(self, name, who, fn, snap, umask=0o022, noatime=False, known=None):
        self.steps.append(Step(name, who, fn, snap, umask, noatime, known))

    def create(self, who, rel, mode=0o666, excl=True, data=b"", umask=0o022, what=None):
        flags = os.O_CREAT | os.O_WRONLY | (os.O_EXCL if excl else 0)
        self.add(what or f"create{' excl' if excl else ''} {mode:o} {rel}", who,
                 op_create(rel, mode, flags, data), _parents([rel]), umask)

    def open(self, who, rel, flags, flagname, snap=None):
        self.add(f"open {flagname} {rel}", who, op_open(rel, flags), snap or [rel])

    def open_each(self, who, rel, modes):
        self.add(f"open {'/'.join(n for _, n in modes)} {rel}", who, op_open_each(rel, modes),
                 [rel])

    def write1(self, who, rel, flags=os.O_WRONLY):
        self.add(f"write 1 byte {rel}", who, op_write1(rel, flags), [rel])

    def truncate(self, who, rel, size):
        self.add(f"truncate {rel} to {size}", who, op_truncate(rel, size), [rel],
                 known=None if who is ROOT else "setid-size")

    def ftruncate(self, who, rel, size):
        self.add(f"ftruncate {rel} to {size}", who, op_ftruncate(rel, size), [rel],
                 known=None if who is ROOT else "setid-size")

    def chmod(self, who, rel, mode):
        self.add(f"chmod {mode:o} {rel}", who, op_chmod(rel, mode), [rel])

    def chown(self, who, rel, uid, gid, follow=True):
        self.add(f"{'' if follow else 'l'}chown {uid}:{gid} {rel}", who,
                 op_chown(rel, uid, gid, follow), [rel])

    def utimens(self, who, rel, atime, mtime, nofollow=False):
        self.add(f"utimensat {_tname(atime)},{_tname(mtime)}{' nofollow' if nofollow else ''} "
                 f"{rel}", who, op_utimens(rel, atime, mtime, nofollow), [rel])

    def link(self, who, src, dst):
        self.add(f"link {src} {dst}", who, op_link(src, dst), _parents([src, dst]))

    def rename(self, who, src, dst, extra=()):
        self.add(f"rename {src} {dst}", who, op_rename(src, dst), _parents([src, dst, *extra]))

    def unlink(self, who, rel, extra=()):
        self.add(f"unlink {rel}", who, op_unlink(rel), _parents([rel, *extra]))

    def mkdir(self, who, rel, mode=0o777, umask=0o022):
        self.add(f"mkdir {mode:o} {rel}", who, op_mkdir(rel, mode), _parents([rel]), umask)

    def rmdir(self, who, rel):
        self.add(f"rmdir {rel}", who, op_rmdir(rel), _parents([rel]))

    def symlink(self, who, target, rel):
        self.add(f"symlink {rel}", who, op_symlink(target, rel), _parents([rel]))

    def readlink(self, who, rel):
        self.add(f"readlink {rel}", who, op_readlink(rel), [rel], noatime=True)

    def mkfifo(self, who, rel, mode=0o666):
        self.add(f"mkfifo {mode:o} {rel}", who, op_mkfifo(rel, mode), _parents([rel]))

    def rootfile(self, rel, uid, gid, mode):
        """A file created by root (O_EXCL, 0600), chowned and chmodded by root: one step."""
        fns = [op_create(rel, 0o600)]
        if (uid, gid) != (0, 0):
            fns.append(op_chown(rel, uid, gid))
        fns.append(op_chmod(rel, mode))
        chown = f", chown {uid}:{gid}" if (uid, gid) != (0, 0) else ""
        self.add(f"create{chown}, chmod {mode:o} {rel}", ROOT, op_seq(*fns), _parents([rel]))


def _tname(t):
    return {UTIME_NOW: "NOW", UTIME_OMIT: "OMIT"}.get(t[1], f"{t[0]}.{t[1]:09d}")


def build_plan():
    """The sequence. Names are fresh within it; every object stays until the end."""
    pl = Plan()
    RD, WR, RW = os.O_RDONLY, os.O_WRONLY, os.O_RDWR

    # directories: world-writable, sticky (root's and A's), setgid with A's group, read-only
    pl.mkdir(ROOT, "d777")
    pl.chmod(ROOT, "d777", 0o777)
    pl.mkdir(ROOT, "sticky")
    pl.chmod(ROOT, "sticky", 0o1777)
    pl.mkdir(ROOT, "sgid")
    pl.chown(ROOT, "sgid", -1, G_A)
    pl.chmod(ROOT, "sgid", 0o2777)
    pl.mkdir(ROOT, "stickyA")
    pl.chown(ROOT, "stickyA", A.uid, A.gid)
    pl.chmod(ROOT, "stickyA", 0o1777)
    pl.mkdir(ROOT, "d755", 0o755)

    # create (O_CREAT|O_EXCL) by each user in each kind of directory: owner, group, mode
    for d in ("d777", "sticky", "sgid"):
        for u in (ROOT, A, B):
            pl.create(u, f"{d}/c_{u}")
        for u in (ROOT, A, B):
            pl.mkdir(u, f"{d}/m_{u}")
    for d in ("d777", "sgid"):
        for u in (A, B):
            pl.create(u, f"{d}/sg_{u}", 0o2755)  # S_ISGID kept only for a member of the group
    pl.create(B, "d777/su_B", 0o4755)
    pl.create(A, "d777/sv_A", 0o1755)
    pl.mkdir(A, "d777/msg_A", 0o2755)  # mkdir ignores S_ISGID in the mode
    pl.mkdir(A, "d777/mst_A", 0o1777)
    pl.mkdir(B, "sgid/m_B/sub")  # S_ISGID and group inherited from a setgid parent
    pl.create(A, "d755/no")  # EACCES
    pl.mkdir(B, "d755/no")  # EACCES
    pl.create(B, "d777/c_A")  # EEXIST
    pl.create(A, "d777/um0", umask=0)
    pl.create(A, "d777/um077", umask=0o077)
    pl.mkdir(A, "d777/mum0", umask=0)
    pl.create(A, "d777/unchecked", excl=False)
    pl.create(B, "d777/unchecked", excl=False, data=b"b")  # O_CREAT of an existing 0644: EACCES
    pl.create(A, "d777/unchecked", excl=False, data=b"a")
    pl.create(B, "d777/c_B", 0o600, excl=False, data=b"again")  # existing, own: write
    pl.add("open O_WRONLY|O_TRUNC d777/c_B", B,
           op_open("d777/c_B", os.O_WRONLY | os.O_TRUNC), ["d777/c_B"])

    # open with each access mode by owner, group member and other, for each mode
    owners = (("B2000", B.uid, G_A),  # B owner, A in the group by its supplementary group
              ("A1002", A.uid, B.gid),  # A owner, B in the group by its primary group
              ("root", 0, 0))  # A and B: other
    for mode in (0o477, 0o177, 0o077, 0o644, 0o664, 0o666, 0o600):
        for tag, uid, gid in owners:
            f = f"d777/o{mode:04o}_{tag}"
            pl.rootfile(f, uid, gid, mode)
            for u in (ROOT, A, B):
                pl.open_each(u, f, ((RD, "O_RDONLY"), (WR, "O_WRONLY"), (RW, "O_RDWR")))

    # open(O_CREAT|O_EXCL, 0444) and write through that descriptor: the creator may
    for u, flags in ((A, os.O_RDWR), (B, os.O_WRONLY), (ROOT, os.O_WRONLY)):
        f = f"d777/ro_{u}"
        pl.add(f"create excl 444 {f} and write", u,
               op_create(f, 0o444, os.O_CREAT | os.O_EXCL | flags, b"x"), _parents([f]))
    pl.open(A, "d777/ro_A", WR, "O_WRONLY")  # EACCES: no longer the creating open
    pl.create(A, "d777/ro_A", 0o444, excl=False, data=b"y")  # existing: EACCES
    pl.create(ROOT, "d777/ro_A", 0o444, excl=False, data=b"r")
    pl.add("create 444 d777/ro2_A (not exclusive) and write", A,
           op_create("d777/ro2_A", 0o444, os.O_CREAT | os.O_RDWR, b"x"), _parents(["d777/ro2_A"]))

    # a write by a non-root user clears S_ISUID, and S_ISGID with group-execute; root keeps them
    for mode in (0o4777, 0o2777, 0o6777, 0o2767):
        for u in (B, A, ROOT):
            f = f"d777/w{mode:o}_{u}"
            pl.rootfile(f, 0, 0, mode)
            pl.write1(u, f)
    pl.rootfile("d777/wown_A", A.uid, G_A, 0o6777)  # the owner writing, in the file's group
    pl.write1(A, "d777/wown_A")
    pl.rootfile("d777/wown_B", B.uid, B.gid, 0o2767)
    pl.write1(B, "d777/wown_B", os.O_WRONLY | os.O_APPEND)
    pl.rootfile("d777/wown_B2", B.uid, B.gid, 0o6755)
    pl.write1(B, "d777/wown_B2", os.O_RDWR)

    # truncate and ftruncate by a non-owner with write permission, and by root
    for mode in (0o6777, 0o4777, 0o2777, 0o2767):
        f = f"d777/t{mode:o}"
        pl.rootfile(f, 0, 0, mode)
        pl.truncate(B, f, 10)
        pl.chmod(ROOT, f, mode)
        pl.ftruncate(A, f, 3)
        pl.chmod(ROOT, f, mode)
        pl.truncate(ROOT, f, 7)
        pl.ftruncate(ROOT, f, 0)
    pl.rootfile("d777/ttrunc", 0, 0, 0o6777)
    pl.write1(ROOT, "d777/ttrunc")
    pl.add("open O_WRONLY|O_TRUNC d777/ttrunc", B,
           op_open("d777/ttrunc", os.O_WRONLY | os.O_TRUNC), ["d777/ttrunc"], known="setid-size")
    pl.rootfile("d777/tplain", 0, 0, 0o666)  # the same without set-id bits
    pl.truncate(B, "d777/tplain", 10)
    pl.ftruncate(A, "d777/tplain", 3)
    pl.truncate(B, "d777/tplain", 1)
    pl.ftruncate(A, "d777/tplain", 5)
    pl.add("open O_WRONLY|O_TRUNC d777/tplain", B,
           op_open("d777/tplain", os.O_WRONLY | os.O_TRUNC), ["d777/tplain"])
    pl.truncate(B, "d777/c_A", 1)  # EACCES: 0644, not the owner

    # chmod: owner, non-owner, root; S_ISGID for a group the owner is not in; sticky bits
    f = "d777/cm"
    pl.create(A, f, 0o644)
    pl.chmod(A, f, 0o640)
    pl.chmod(B, f, 0o666)  # EPERM
    pl.chmod(ROOT, f, 0o604)
    pl.chmod(A, f, 0o4755)
    pl.chmod(A, f, 0o2755)  # group 1001: A's own
    pl.chown(A, f, -1, G_A)  # chgrp by the owner clears the set-id bits
    pl.chmod(A, f, 0o6755)
    pl.chown(ROOT, f, -1, G_NONE)
    pl.chmod(A, f, 0o2755)  # not in group 3000: S_ISGID cleared
    pl.chmod(A, f, 0o6775)
    pl.chmod(ROOT, f, 0o2755)
    pl.chmod(A, f, 0o1644)  # sticky on a file
    pl.chmod(B, f, 0o644)  # EPERM
    pl.chmod(A, "sgid/c_B", 0o666)  # EPERM
    pl.chmod(B, "sgid/c_B", 0o2644)  # B not in 2000: cleared
    pl.chmod(B, "sgid/c_B", 0o1600)
    d = "d777/cmd"
    pl.mkdir(A, d, 0o755)
    pl.chmod(A, d, 0o1777)
    pl.chmod(A, d, 0o2775)
    pl.chown(A, d, -1, G_A)  # directories keep S_ISGID on chgrp
    pl.chown(ROOT, d, -1, G_NONE)
    pl.chmod(A, d, 0o2775)  # not in 3000: cleared
    pl.chmod(B, d, 0o777)  # EPERM
    pl.chmod(ROOT, d, 0o3777)
    pl.chmod(A, "d777/m_A", 0o1700)

    # chown: by root, by the owner to another uid (EPERM), chgrp to own / foreign groups
    f = "d777/co"
    pl.create(B, f, 0o644)
    pl.chown(ROOT, f, A.uid, A.gid)
    pl.chown(A, f, B.uid, -1)  # EPERM
    pl.chown(A, f, A.uid, -1)
    pl.chmod(A, f, 0o4755)
    pl.chown(A, f, A.uid, -1)  # to itself: S_ISUID cleared all the same
    pl.chown(A, f, -1, G_A)
    pl.chown(A, f, -1, G_NONE)  # EPERM
    pl.chown(A, f, -1, B.gid)  # EPERM
    pl.chown(B, f, -1, B.gid)  # EPERM: not the owner
    pl.chown(B, f, B.uid, B.gid)  # EPERM
    # (not chown(f, -1, -1): it clears S_ISUID and sets ctime locally, but the NFS client
    # sends no SETATTR without an attribute to set, so it tests the client only)
    for mode in (0o4755, 0o2755, 0o2745, 0o6755, 0o6745):
        f = f"d777/cr{mode:o}"
        pl.rootfile(f, A.uid, A.gid, mode)
        pl.chown(ROOT, f, B.uid, B.gid)  # root's chown clears S_ISUID, S_ISGID if g+x
    pl.chown(ROOT, "d777/cmd", B.uid, B.gid)  # a directory keeps its set-id bits

    # utimensat: explicit, UTIME_NOW, UTIME_OMIT; owner, writer, non-writer, root
    u1, u2 = "d777/u1", "d777/u2"
    pl.create(A, u1, 0o666, umask=0)
    pl.create(A, u2, 0o644)
    pl.utimens(A, u1, T1, T2)
    pl.utimens(A, u1, NOW, NOW)
    pl.utimens(A, u1, OMIT, T3)
    pl.utimens(A, u1, T4, OMIT)
    pl.utimens(A, u1, NOW, OMIT)
    pl.utimens(A, u1, OMIT, NOW)
    pl.utimens(A, u1, OMIT, OMIT)
    pl.utimens(B, u1, T5, T6)  # EPERM
    pl.utimens(B, u1, NOW, NOW)  # write permission suffices
    pl.utimens(B, u1, OMIT, T7)  # EPERM
    pl.utimens(B, u1, T1, NOW)  # EPERM
    pl.utimens(B, u2, NOW, NOW)  # EACCES
    pl.utimens(B, u2, T5, T6)  # EPERM
    pl.utimens(B, u2, OMIT, OMIT)  # nothing to do: no permission needed
    # (not UTIME_NOW for one time and UTIME_OMIT for the other by a non-owner: Linux refuses
    # it with EPERM as an explicit time, but the NFS client sends it as SETATTR of that time to
    # the server's time, the request utimensat(NULL) makes, which a writer may send)
    pl.utimens(ROOT, u2, T5, T6)
    pl.utimens(ROOT, u2, NOW, T7)
    pl.utimens(ROOT, u2, NOW, NOW)
    pl.utimens(A, "d777/m_A", T2, T3)  # a directory
    pl.symlink(A, "u1", "d777/ul")
    pl.utimens(A, "d777/ul", T3, T4, nofollow=True)  # the link itself; atime not compared
    pl.add(f"utimensat {_tname(T6)},{_tname(T7)} d777/ul (follows)", A, op_utimens("d777/ul", T6, T7),
           ["d777/ul", u1])

    # hard links
    pl.create(A, "d777/l1", 0o644)
    pl.link(A, "d777/l1", "d777/l1b")
    pl.link(B, "d777/l1", "d777/l1c")  # by a non-owner (fs.protected_hardlinks decides)
    pl.link(A, "d777/l1", "sgid/l1d")
    pl.link(A, "d777/l1", "d777/l1b")  # EEXIST
    pl.link(A, "d777/m_A", "d777/l1dir")  # EPERM
    pl.link(B, "d777/l1", "d755/l1e")  # EACCES
    pl.link(A, "d777/nope", "d777/l1f")  # ENOENT
    pl.unlink(A, "d777/l1b", extra=["d777/l1"])
    pl.unlink(A, "sgid/l1d", extra=["d777/l1"])

    # renames: same directory, across, over a file, of directories, in sticky directories
    pl.create(A, "d777/r1", 0o644)
    pl.rename(A, "d777/r1", "d777/r2")
    pl.rename(A, "d777/r2", "sgid/r3")  # keeps its group
    pl.rename(A, "sgid/r3", "d777/r4")
    pl.create(B, "d777/r5", 0o644)
    pl.link(B, "d777/r5", "d777/r5b")
    pl.rename(A, "d777/r4", "d777/r5", extra=["d777/r5b"])  # over B's file: its nlink drops
    pl.rename(A, "d777/r1", "d777/r6")  # ENOENT
    pl.mkdir(A, "d777/rd1")
    pl.mkdir(A, "d777/rd2")
    pl.create(A, "d777/rd2/x")
    pl.rename(A, "d777/rd1", "d777/rd2")  # ENOTEMPTY
    pl.rename(A, "d777/r5", "d777/rd1")  # EISDIR
    pl.rename(A, "d777/rd1", "d777/r5")  # ENOTDIR
    pl.rename(A, "d777/rd1", "sgid/rd1")  # a directory across directories
    pl.rename(B, "sgid/rd1", "d777/rd1")  # EACCES: its ".." cannot change without write on it
    pl.rename(A, "d777/rd2", "d777/rd2/sub")  # EINVAL
    pl.mkdir(ROOT, "d777/rd3")
    pl.rename(A, "d777/rd3", "sgid/rd3")  # EACCES: root's 0755 directory to another parent
    pl.rename(A, "d777/rd3", "d777/rd4")  # within the same parent ".." stays: allowed
    pl.rename(ROOT, "d777/rd4", "sgid/rd4")
    pl.create(A, "sticky/s1", 0o666)
    pl.rename(B, "sticky/s1", "sticky/s2")  # EPERM: sticky, not the owner
    pl.rename(B, "sticky/c_B", "sticky/s3")
    pl.rename(B, "sticky/s3", "sticky/s1")  # EPERM: would replace A's file
    pl.rename(A, "sticky/s1", "sticky/s4")
    pl.rename(ROOT, "sticky/s4", "sticky/s5")
    pl.create(B, "stickyA/b1", 0o644)
    pl.rename(A, "stickyA/b1", "stickyA/b2")  # by the directory's owner
    pl.create(B, "stickyA/b3", 0o644)
    pl.unlink(A, "stickyA/b3")  # by the directory's owner
    pl.unlink(B, "sticky/s5")  # EPERM
    pl.unlink(A, "sticky/c_B")  # ENOENT (renamed)
    pl.unlink(A, "sticky/c_root")  # EPERM
    pl.unlink(B, "sticky/s3")  # B's own
    pl.unlink(A, "sticky/s5")
    pl.unlink(ROOT, "sticky/c_A")
    pl.unlink(B, "stickyA/b2")  # own file
    pl.unlink(B, "d755/x")  # ENOENT
    pl.unlink(B, "d777/c_A")  # not sticky: B may

    # mkdir and rmdir
    pl.mkdir(A, "d777/k1", 0o755)
    pl.mkdir(B, "d777/k1")  # EEXIST
    pl.create(A, "d777/k1/f")
    pl.rmdir(A, "d777/k1")  # ENOTEMPTY
    pl.rmdir(B, "d777/k1")  # ENOTEMPTY
    pl.unlink(B, "d777/k1/f")  # EACCES: k1 is 0755
    pl.unlink(A, "d777/k1/f")
    pl.rmdir(B, "d777/k1")  # not sticky: B may
    pl.rmdir(A, "d777/c_B")  # ENOTDIR
    pl.unlink(A, "d777/m_A")  # EISDIR
    pl.rmdir(A, "d777/k1")  # ENOENT
    pl.mkdir(A, "sticky/k2")
    pl.rmdir(B, "sticky/k2")  # EPERM
    pl.rmdir(ROOT, "sticky/k2")
    pl.rmdir(A, "d777/m_A/.")  # EINVAL
    pl.mkdir(A, "d777/k3/k4")  # ENOENT

    # symlinks
    pl.symlink(A, "target-a", "d777/s1")
    pl.readlink(B, "d777/s1")
    pl.symlink(B, "x" * 200, "sgid/s2")
    pl.readlink(A, "sgid/s2")
    pl.symlink(A, "y", "d777/s1")  # EEXIST
    pl.symlink(B, "z", "d755/s3")  # EACCES
    pl.readlink(A, "d777/c_B")  # EINVAL
    pl.chown(ROOT, "d777/s1", B.uid, G_A, follow=False)
    pl.symlink(A, "s4target", "d777/s4")
    pl.create(A, "d777/s4", 0o644)  # O_EXCL does not follow: EEXIST
    pl.add("create through a dangling symlink d777/s4", A,
           op_create("d777/s4", 0o600, os.O_CREAT | os.O_WRONLY), ["d777/s4", "d777/s4target",
                                                                  "d777"])
    pl.unlink(A, "d777/s4")

    # FIFOs
    pl.mkfifo(A, "d777/f1")
    pl.mkfifo(B, "sgid/f2", 0o660)
    pl.mkfifo(ROOT, "d777/f3", 0o600)
    pl.mkfifo(A, "d777/f4", 0o1666)
    pl.chmod(A, "d777/f1", 0o600)
    pl.chmod(B, "d777/f1", 0o666)  # EPERM
    pl.chown(ROOT, "d777/f1", B.uid, B.gid)
    pl.mkfifo(A, "d777/f1")  # EEXIST
    pl.mkfifo(B, "d755/f5")  # EACCES
    pl.link(A, "d777/f3", "d777/f3b")  # root's FIFO, 0600: fs.protected_hardlinks decides
    pl.unlink(B, "d777/f1")

    # a file unlinked while open (KNOWN: silly rename), then its directory removed
    pl.mkdir(A, "d777/sr")
    pl.create(A, "d777/sr/f", 0o644, data=b"data")
    pl.add("open, unlink, fstat and list while open", A, op_silly("d777/sr/f"),
           ["d777/sr", "d777"], noatime=True, known="silly-rename")
    pl.rmdir(A, "d777/sr")
    return pl


# ---------------------------------------------------------------------------------------------
# running: a side is one directory with its own history of what it has seen


def run_as(who, umask, fn):
    """fn(res) in a forked child with who's identity and umask; returns res."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.close(r)
            res = []
            try:
                os.setgroups(list(who.groups))
                os.setresgid(who.gid, who.gid, who.gid)
                os.setresuid(who.uid, who.uid, who.uid)
                os.umask(umask)
                fn(res)
            except _Stop:
                pass
            except BaseException as e:  # a bug of the program: shows as a difference too
                res.append(f"exception:{type(e).__name__}:{e}")
            data = json.dumps(res).encode()
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        return [f"child died: wait status {status}"]
    return json.loads(b"".join(chunks))


def _classify(v, prev, t0, t1):
    if prev is not None and v == prev:
        return "same"
    if v in EXPLICIT_NS:
        return f"set:{v // 10**9}.{v % 10**9:09d}"
    if t0 - TOLERANCE_NS <= v <= t1 + TOLERANCE_NS:
        return "now"
    return "changed" if prev is not None else "old"


class Side:
    def __init__(self, label, base):
        self.label, self.base = label, base
        self.prev = {}  # st_ino -> (atime, mtime, ctime) when this side last looked
        self.last_end = 0.0

    def path(self, rel):
        return os.path.join(self.base, rel) if rel else self.base

    def run(self, step):
        """Runs the step; returns its record {field: text} and the number of calls in it."""
        wait = self.last_end + GAP - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        t0 = time.time_ns()
        res = run_as(step.who, step.umask, lambda res: step.fn(res, self.path))
        t1 = time.time_ns()
        self.last_end = time.monotonic()
        rec = {"result": " ".join(res).replace(self.base, "<dir>")}
        for rel in step.snap:
            self.snapshot(rec, rel or ".", self.path(rel), t0, t1, step.noatime)
        return rec, len(res)

    def snapshot(self, rec, rel, path, t0, t1, noatime):
        try:
            st = fresh_stat(path)
        except OSError as e:
            rec[rel] = errname(e.errno)
            return
        rec[f"{rel} mode"] = f"{st.mode:07o}"
        rec[f"{rel} uid:gid"] = f"{st.uid}:{st.gid}"
        rec[f"{rel} nlink"] = str(st.nlink)
        if stat.S_ISREG(st.mode) or stat.S_ISLNK(st.mode):
            rec[f"{rel} size"] = str(st.size)
        prev = self.prev.get(st.ino)
        times = (st.atime, st.mtime, st.ctime)
        for i, name in enumerate(("atime", "mtime", "ctime")):
            if name == "atime" and (noatime or stat.S_ISLNK(st.mode)):
                continue
            rec[f"{rel} {name}"] = _classify(times[i], prev and prev[i], t0, t1)
        self.prev[st.ino] = times


class Report:
    def __init__(self):
        self.steps = 0  # steps run on both sides and compared
        self.compared = 0  # system calls in them whose results were compared
        self.diffs = []  # (index, step, {field: (local, nfs)}, known reason or None)

    @property
    def unexpected(self):
        return [d for d in self.diffs if d[3] is None]

    @property
    def expected(self):
        return [d for d in self.diffs if d[3] is not None]

    def summary(self):
        return (f"{self.compared} calls compared in {self.steps} steps, "
                f"{len(self.unexpected)} differences (+{len(self.expected)} expected)")


def format_diff(diff):
    i, step, fields, known = diff
    parts = [f"{k}: local {a} nfs {b}" for k, (a, b) in fields.items()]
    tag = "expected difference" if known else "DIFF"
    return f"{tag} #{i} {step.name} (as {step.who}): " + "; ".join(parts)


def format_record(i, step, rec):
    """One step and what a side saw, on one line (--show)."""
    return f"#{i} {step.name} (as {step.who}): " + "; ".join(f"{k}={v}" for k, v in rec.items())


def run(local_dir, nfs_dir, log=print, show=False):
    """Runs the plan in local_dir/px and nfs_dir/px (both created, removed at the end, as root)
    and returns the Report; each difference goes to log as it is found (with show, every
    step's local record too)."""
    if os.geteuid() != 0:
        raise PermissionError("posixdiff needs root (it switches to the test users)")
    sides = []
    old_umask = os.umask(0o022)
    try:
        for label, top in (("local", local_dir), ("nfs", nfs_dir)):
            base = os.path.join(top, WORKDIR)
            if os.path.lexists(base):
                shutil.rmtree(base)
            os.mkdir(base)
            os.chmod(base, 0o777)
            sides.append(Side(label, base))
        loc, nfs = sides
        rep = Report()
        for i, step in enumerate(build_plan().steps, 1):
            a, ncalls = loc.run(step)
            b, _ = nfs.run(step)
            rep.steps += 1
            rep.compared += ncalls
            if show:
                log(format_record(i, step, a))
            if a == b:
                continue
            fields = {k: (a.get(k, "-"), b.get(k, "-")) for k in list(a) + [k for k in b if k not in a]
                      if a.get(k) != b.get(k)}
            known = KNOWN.get(step.known)
            reason = known[0] if known and known[1](a, b) else None
            rep.diffs.append((i, step, fields, reason))
            log(format_diff(rep.diffs[-1]))
        return rep
    finally:
        os.umask(old_umask)
        for s in sides:
            shutil.rmtree(s.base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--local", required=True, help="reference directory (a local file system)")
    ap.add_argument("--nfs", required=True, help="directory under test (on the NFS mount)")
    ap.add_argument("--show", action="store_true", help="print every step's local record")
    a = ap.parse_args()
    rep = run(a.local, a.nfs, show=a.show)
    for _, _, _, reason in rep.expected:
        print(f"  expected because: {reason}")
    print(rep.summary())
    return 1 if rep.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
