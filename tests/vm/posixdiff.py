#!/usr/bin/env python3
"""Differential POSIX test: the same sequence of system calls on two directories, compared.

One directory is the reference (a local file system with POSIX ACLs, tmpfs in the guest), the
other is on the NFS mount under test. Every step runs in a forked child with the step's
identity (root; user A: uid 1001, gid 1001, supplementary group 2000; user B: uid 1002, gid
1002, no supplementary groups; for the ACL steps also user C: uid 1003, gid 1003, the user
named in the ACL entries, and user D: uid 1004, gid 1004, supplementary group 2100, the group
named in them; numeric ids: setfacl takes and getfacl -n prints numbers, and with AUTH_SYS the
Linux client and both servers use numeric NFSv4 who-names, so no user database entries are
needed; on a Kerberos mount (--domain) the ids must have names, and principals of those names
with tickets: NFSv4 who-names are then NAME@DOMAIN) and umask, first on the local directory, then on the NFS one. Per step the two sides
must agree on
  * the result of every call in it: success (a write's count, a readlink's text) or the errno;
  * for each object the step touched, from statx(AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC) as
    root (FORCE_SYNC makes the NFS client ask the server instead of its attribute cache): the
    whole st_mode (type, set-id and sticky bits), uid, gid, nlink, size (regular files and
    symlinks) and each of atime, mtime and ctime as its relation to the step: "same" (unchanged
    since this side last looked at the object), "now" (within TOLERANCE_NS, 5 s, of the step's wall
    time), "set:SEC.NSEC" (one of the explicit utimensat values), "changed" or "old".
  * in the ACL steps (acl_plan), also each object's ACLs (acl_view, read as root): on NFSv3
    (and when the directory under test is not on NFS) the access ACL and a directory's default
    ACL as stored (system.posix_acl_access/_default, what getfacl shows; on the mount they
    travel by the NFSACL protocol); on NFSv4, where the Linux client has no POSIX ACL
    attributes, the NFSv4 ACL: the mount's acl attribute (system.nfs4_acl, what nfs4_getfacl
    shows) against knfsd's mapping (docs/acl.md) of the local POSIX ACLs.
Inode numbers, st_dev, st_blocks and directory sizes are not compared. Symlinks' atime is not
compared (every path walk through one touches it locally, the NFS client does not tell the
server), nor the atime after a step that reads (readlink) or lists a directory.

The ACL steps: set (by the owner; a named user, other and root try too), access as a named
user, a member of a named group and other (open for reading and writing, write, truncate,
utimensat to now, create, list, rename, remove, getfacl) with a mask taking rights away, chmod
moving the mask, chown moving the owner's entry, a group entry granting what the owning
group's does not and refusing what other's would grant, a named user refused what other may;
inheritance of a directory's default ACL by files made with open(O_CREAT) and with O_EXCL (0644,
0666 under umask 022, 0666 under umask 077), directories (0777, 0750), a FIFO, and by what the
named user makes in the new directory; a default ACL of the three base entries; the default
ACL removed. What is compared, per NFS version:
  * NFSv3: setfacl runs on both sides (on the mount it sends SETACL; -m, -x, -b, -d, -k as a
    user would), the ACLs as stored, getfacl's output and every access. The Linux v3 client
    applies a directory's default ACL itself (GETACL of the directory, then the create with the
    resulting mode and SETACL of the new object's ACLs), so creates compare with local ones
    exactly, the umask ignored under a default ACL as POSIX wants.
  * NFSv4.x: setfacl cannot work on the mount; the NFS side sets the same ACLs with
    nfs4_setfacl -s of their NFSv4 form (knfsd's mapping, which the server maps back), the
    local side with setfacl --set. An NFSv4 ACL cannot carry a named entry's bits beyond the
    mask, nor a mask other than the union of what the owning group and named entries keep
    under it: Plan.setacl refuses the latter, and allows the former only where no later step
    widens the mask (the views, the mode and every access are the same; the stored entry is
    not). The views compared are NFSv4 ACLs (above), plus the mode and every access; the NFS
    side's snapshot after a set drops the client's caches first (Side.run: a client holding a
    write delegation would show the mode from before the set). A directory's default ACL
    removed by an ACL without inheritable ACEs: knfsd keeps it (KNOWN "default-kept"), so the
    creates that follow the removal are made only on NFSv3. Creates under a default ACL: an NFSv4.0 or 4.1 client cannot send its umask apart
    (mode_umask is NFSv4.2's, RFC 8275) and applies it to the mode it sends, so the server
    cannot ignore it; there the local side asks for the mode the client sends (_sent_mode), and
    for O_EXCL on NFSv4.0 (EXCLUSIVE4, then a SETATTR of the mode) creates with mode 0 and then
    chmods, as the server is asked to. NFSv4.2 compares with local creates exactly.
Left out on purpose: an access ACL of four entries whose mask equals the owning group's entry
(NFSACL's encoding cannot tell it from three entries: the client and knfsd drop such a mask;
locally it stays) and setting an ACL that does not change (setfacl then sets nothing,
nfs4_setfacl sets it again, which changes the ctime).

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
import grp
import json
import os
import pwd
import shutil
import stat
import struct
import subprocess
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
C = User("C", 1003, 1003, ())  # the ACL steps' named user (u:1003), in none of A's groups
D = User("D", 1004, 1004, (2100,))  # the ACL steps' group member (g:2100)
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


def _default_kept(loc, nfs):
    """The NFS side's ACL is the local one followed by inherit-only ACEs (a default ACL), and
    nothing else differs."""
    def ok(k, a, b):
        extra = b[len(a) + 1:].split() if b.startswith(a + " ") else []
        return k.endswith(" acl") and extra and all(x.split(":")[1] in ("fdi", "fdig")
                                                    for x in extra)
    return _only_fields(loc, nfs, ok)


KNOWN = {
    "default-kept": (
        "a directory's default ACL after an NFSv4 ACL without inheritable ACEs: knfsd (Linux "
        "6.12: nfsd_setattr sets the default ACL only when nfs4_acl_nfsv4_to_posix made one, "
        "from inheritable ACEs) leaves the old default ACL in place; the ACL set replaces the "
        "whole ACL, inheritance included, as setfacl -k does locally and rnfsd does (and so "
        "shows no difference)",
        _default_kept),
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
# POSIX ACLs: setfacl's text, the kernel's extended-attribute format, and knfsd's mapping of a
# POSIX ACL to an NFSv4 ACL (fs/nfsd/nfs4acl.c, _posix_to_nfsv4_one; docs/acl.md), which is
# how an NFSv4 client sees a POSIX ACL: the local side's NFSv4 view on NFSv4 mounts, and what
# nfs4_setfacl sends to set one

V4 = ("4.0", "4.1", "4.2")
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 1, 2, 4, 8, 0x10, 0x20
_ACL_TAG = {"u": (ACL_USER_OBJ, ACL_USER), "g": (ACL_GROUP_OBJ, ACL_GROUP),
            "m": (ACL_MASK, ACL_MASK), "o": (ACL_OTHER, ACL_OTHER)}
_ACL_LETTER = {ACL_USER_OBJ: "u", ACL_USER: "u", ACL_GROUP_OBJ: "g", ACL_GROUP: "g",
               ACL_MASK: "m", ACL_OTHER: "o"}


def rwx(p):
    return ("r" if p & 4 else "-") + ("w" if p & 2 else "-") + ("x" if p & 1 else "-")


def parse_acl(text):
    """setfacl's short text ("u::rw-,u:1003:r--,g::r--,m::r--,o::---") -> [(tag, id, perm)] in
    the kernel's order; id -1 for the owner, owning group, mask and other entries."""
    out = []
    for e in text.split(","):
        t, q, p = e.split(":")
        out.append((_ACL_TAG[t][1 if q else 0], int(q) if q else -1,
                    (4 if "r" in p else 0) | (2 if "w" in p else 0) | (1 if "x" in p else 0)))
    return sorted(out)


def acl_str(entries, prefix=""):
    return ",".join(f"{prefix}{_ACL_LETTER[t]}:{'' if q < 0 else q}:{rwx(p)}"
                    for t, q, p in entries)


def mode_acl(mode):
    """The three entries a file without an access ACL has (posix_acl_from_mode)."""
    return [(ACL_USER_OBJ, -1, (mode >> 6) & 7), (ACL_GROUP_OBJ, -1, (mode >> 3) & 7),
            (ACL_OTHER, -1, mode & 7)]


def read_posix_acl(path, default=False):
    """system.posix_acl_access (or _default) -> [(tag, id, perm)] as stored, None without one."""
    try:
        data = os.getxattr(path, "system.posix_acl_" + ("default" if default else "access"))
    except OSError as e:
        if e.errno == errno.ENODATA:
            return None
        raise
    out = []
    for off in range(4, len(data) - 7, 8):  # after the version (2): u16 tag, u16 perm, u32 id
        tag, perm, q = struct.unpack_from("<HHI", data, off)
        out.append((tag, q if tag in (ACL_USER, ACL_GROUP) else -1, perm))
    return out


ACE_ALLOW, ACE_DENY = 0, 1
ACE_FILE_INHERIT, ACE_DIRECTORY_INHERIT, ACE_INHERIT_ONLY = 0x1, 0x2, 0x8
ACE_IDENTIFIER_GROUP = 0x40
M_READ, M_WRITE, M_APPEND, M_EXECUTE, M_DELETE_CHILD = 0x1, 0x2, 0x4, 0x20, 0x40
M_ANYONE = 0x80 | 0x20000 | 0x100000  # READ_ATTRIBUTES, READ_ACL, SYNCHRONIZE
M_OWNER = 0x100 | 0x40000  # WRITE_ATTRIBUTES, WRITE_ACL
# nfs4_acl(5)'s letters, which nfs4_setfacl takes
_ACE_FLAGS = ((0x1, "f"), (0x2, "d"), (0x4, "n"), (0x8, "i"), (0x10, "S"), (0x20, "F"), (0x40, "g"),
              (0x80, "I"))
_ACE_PERMS = ((0x1, "r"), (0x2, "w"), (0x4, "a"), (0x8, "n"), (0x10, "N"), (0x20, "x"), (0x40, "D"),
              (0x80, "t"), (0x100, "T"), (0x10000, "d"), (0x20000, "c"), (0x40000, "C"),
              (0x80000, "o"), (0x100000, "y"))


def _letters(v, table):
    s = "".join(c for bit, c in table if v & bit)
    rest = v & ~sum(bit for bit, _ in table)
    return s + (f"+{rest:#x}" if rest else "")


# The NFSv4 domain of who-names in ACLs, or None for numeric ones. With AUTH_SYS the Linux client
# and both servers send numeric ids; under Kerberos the servers send and accept only
# NAME@DOMAIN (knfsd refuses a numeric who from an RPCSEC_GSS caller), so run() is told the
# domain and the named entries' ids go by their names in the user and group databases.
WHO_DOMAIN = None


def who_name(q, group):
    """The NFSv4 who of a named ACL entry with id q."""
    if WHO_DOMAIN is None:
        return str(q)
    name = grp.getgrgid(q).gr_name if group else pwd.getpwuid(q).pw_name
    return f"{name}@{WHO_DOMAIN}"


def ace_text(ace):
    """An ACE as nfs4_setfacl takes it (TYPE:FLAGS:WHO:PERMS)."""
    typ, flags, who, mask = ace
    t = {ACE_ALLOW: "A", ACE_DENY: "D"}.get(typ, f"type{typ}")
    return f"{t}:{_letters(flags, _ACE_FLAGS)}:{who}:{_letters(mask, _ACE_PERMS)}"


def _deny_mask(perm, is_dir):
    m = M_READ if perm & 4 else 0
    if perm & 2:
        m |= M_WRITE | M_APPEND | (M_DELETE_CHILD if is_dir else 0)
    return m | (M_EXECUTE if perm & 1 else 0)


def _allow_mask(perm, is_dir, owner=False):
    return M_ANYONE | (M_OWNER if owner else 0) | _deny_mask(perm, is_dir)


def nfs4_of_posix(entries, is_dir, default=False):
    """knfsd's ACEs (type, flags, who, mask) for one POSIX ACL, in its order: the owner's
    DENY of what later entries grant and it lacks, its ALLOW; each named user's DENY and ALLOW
    (limited by the mask); the ALLOWs of the owning group and the named groups, then their
    DENYs of what other has; other's ALLOW. A default ACL's ACEs are flagged inherit-only."""
    f = ACE_FILE_INHERIT | ACE_DIRECTORY_INHERIT | ACE_INHERIT_ONLY if default else 0
    mask = next((p for t, _, p in entries if t == ACL_MASK), 7)
    owner = next(p for t, _, p in entries if t == ACL_USER_OBJ)
    group = next(p for t, _, p in entries if t == ACL_GROUP_OBJ) & mask
    other = next(p for t, _, p in entries if t == ACL_OTHER)
    nusers = [(q, p & mask) for t, q, p in entries if t == ACL_USER]
    ngroups = [(q, p & mask) for t, q, p in entries if t == ACL_GROUP]
    users = groups = 0
    for _, p in nusers:
        users |= p
    for _, p in ngroups:
        groups |= p
    aces = []
    deny = ~owner & (users | group | groups | other) & 7
    if deny:
        aces.append((ACE_DENY, f, "OWNER@", _deny_mask(deny, is_dir)))
    aces.append((ACE_ALLOW, f, "OWNER@", _allow_mask(owner, is_dir, owner=True)))
    for q, p in nusers:
        deny = ~p & (groups | group | other) & 7
        if deny:
            aces.append((ACE_DENY, f, who_name(q, False), _deny_mask(deny, is_dir)))
        aces.append((ACE_ALLOW, f, who_name(q, False), _allow_mask(p, is_dir)))
    aces.append((ACE_ALLOW, f, "GROUP@", _allow_mask(group, is_dir)))
    for q, p in ngroups:
        aces.append((ACE_ALLOW, f | ACE_IDENTIFIER_GROUP, who_name(q, True), _allow_mask(p, is_dir)))
    deny = ~group & other & 7
    if deny:
        aces.append((ACE_DENY, f, "GROUP@", _deny_mask(deny, is_dir)))
    for q, p in ngroups:
        deny = ~p & other & 7
        if deny:
            aces.append((ACE_DENY, f | ACE_IDENTIFIER_GROUP, who_name(q, True), _deny_mask(deny, is_dir)))
    aces.append((ACE_ALLOW, f, "EVERYONE@", _allow_mask(other, is_dir)))
    return aces


def read_nfs4_acl(path):
    """system.nfs4_acl (what nfs4_getfacl reads: the acl attribute's XDR) -> [(type, flags,
    who, mask)]."""
    data = os.getxattr(path, "system.nfs4_acl")
    (n,), off, out = struct.unpack_from(">I", data, 0), 4, []
    for _ in range(n):
        typ, flags, mask, wlen = struct.unpack_from(">IIII", data, off)
        off += 16
        out.append((typ, flags, data[off:off + wlen].decode(errors="replace"), mask))
        off += (wlen + 3) & ~3
    return out


def acl_view(path, mode, nfs, vers):
    """An object's ACLs as compared: with NFSv4 its NFSv4 ACL (the mount's acl attribute; on
    the local side knfsd's mapping of the access ACL, or of the mode without one, and of a
    directory's default ACL); otherwise the access ACL and a directory's default ACL as
    stored ("-" for none)."""
    is_dir = stat.S_ISDIR(mode)
    if vers in V4:
        if nfs:
            aces = read_nfs4_acl(path)
        else:
            aces = nfs4_of_posix(read_posix_acl(path) or mode_acl(mode), is_dir)
            dflt = read_posix_acl(path, True) if is_dir else None
            if dflt:
                aces += nfs4_of_posix(dflt, is_dir, default=True)
        return " ".join(ace_text(a) for a in aces)
    acc = read_posix_acl(path)
    out = acl_str(acc) if acc is not None else "-"
    if is_dir:
        dflt = read_posix_acl(path, True)
        out += " default:" + (acl_str(dflt) if dflt is not None else "-")
    return out


_STRERRORS = sorted(((os.strerror(n), name) for n, name in errno.errorcode.items()),
                    key=lambda x: -len(x[0]))


def _tool(res, what, argv):
    """Runs an ACL tool (in the step's child, as its user); "what:ok" and its output, or
    "what:ERRNO" from the strerror text in its message, and the step stops."""
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C"}
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode == 0:
        res.append(f"{what}:ok")
        return p.stdout
    msg = p.stderr + p.stdout
    err = next((name for s, name in _STRERRORS if s and s in msg), None)
    res.append(f"{what}:{err or 'exit ' + str(p.returncode) + ' ' + ' '.join(msg.split())[:80]}")
    raise _Stop()


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


def op_setacl(rel, access, default, is_dir, v3args):
    """Sets an object's ACLs as the step's user. Locally and on NFSv3 with setfacl (through
    the NFSACL protocol on the mount): v3args if given, else --set of the whole ACL (and -k on a
    directory the ACL gives no default ACL). On an NFSv4 mount, where the Linux client has no
    POSIX ACL attributes, with nfs4_setfacl -s of knfsd's NFSv4 form of the same ACLs (the
    acl attribute in a SETATTR); the local side of an NFSv4 run always uses --set."""
    def fn(res, p):
        if p.nfs and p.vers in V4:
            aces = nfs4_of_posix(access, is_dir)
            if default:
                aces += nfs4_of_posix(default, is_dir, default=True)
            argv = ["nfs4_setfacl", "-s", ",".join(ace_text(a) for a in aces)]
        elif v3args and p.vers not in V4:
            argv = ["setfacl", *v3args]
        else:
            spec = acl_str(access) + ("," + acl_str(default, "d:") if default else "")
            argv = ["setfacl", *(["-k"] if is_dir and not default else []), "--set", spec]
        _tool(res, "setacl", argv + [p(rel)])
    return fn


def op_getacl(rel):
    """Reads an object's ACLs as the step's user: getfacl -c -n locally and on NFSv3; on NFSv4
    system.nfs4_acl, what nfs4_getfacl reads (and, locally, knfsd's mapping of the POSIX
    ACLs, read as the user)."""
    def fn(res, p):
        if p.vers in V4:
            _call(res, "getacl", lambda: acl_view(p(rel), os.stat(p(rel)).st_mode, p.nfs, p.vers))
        else:
            out = _tool(res, "getacl", ["getfacl", "-c", "-n", p(rel)])
            res[-1] = "getacl:" + "|".join(" ".join(ln.split()) for ln in out.splitlines()
                                           if ln.strip())
    return fn


def op_list(rel):
    return lambda res, p: _call(res, "listdir", lambda: ",".join(sorted(os.listdir(p(rel)))) or "-")


def _sent_mode(p, mode):
    """The mode a create asks for, as the server gets it. An NFSv4.0 or 4.1 client cannot send
    its umask apart (mode_umask is an NFSv4.2 attribute, RFC 8275), so the Linux client applies
    it to the mode it sends, and a server that applies a directory's default ACL to that mode
    cannot ignore the umask as POSIX wants (and as a local create, an NFSv3 client, which
    applies the default ACL itself and sends the result with SETACL, and an NFSv4.2 client do).
    On those versions the local side of the inheritance steps asks for that mode (the umask
    then makes no difference to it): it is compared with what the server makes of the request
    it can get."""
    if p.nfs or p.vers not in ("4.0", "4.1"):
        return mode
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


def op_create_sent(rel, mode, excl, data=b""):
    """open(O_CREAT[|O_EXCL]|O_WRONLY, mode) under the umask, the local side of NFSv4.0/4.1 runs
    asking for the mode the client sends (_sent_mode). NFSv4.0 has no exclusive create with
    attributes: the Linux client sends EXCLUSIVE4 (the server makes the file with mode 0) and
    then a SETATTR of the mode, a chmod, which sets the owner, mask and other entries of an
    inherited ACL to the mode's bits; the local side does the same (open with mode 0, fchmod)."""
    flags = os.O_CREAT | os.O_WRONLY | (os.O_EXCL if excl else 0)

    def fn(res, p):
        sent = _sent_mode(p, mode)
        v40x = excl and not p.nfs and p.vers == "4.0"
        fd = _call(res, "open", os.open, p(rel), flags, 0 if v40x else sent, show=False)
        try:
            if v40x:
                os.fchmod(fd, sent)
            if data:
                _call(res, "write", os.write, fd, data)
        finally:
            _call(res, "close", os.close, fd)
    return fn


def op_mkdir_sent(rel, mode):
    return lambda res, p: _call(res, "mkdir", os.mkdir, p(rel), _sent_mode(p, mode))


def op_mkfifo_sent(rel, mode):
    return lambda res, p: _call(res, "mkfifo", os.mkfifo, p(rel), _sent_mode(p, mode))


class Step:
    def __init__(self, name, who, fn, snap, umask=0o022, noatime=False, known=None, acl=False,
                 drop=False):
        self.name, self.who, self.fn, self.snap = name, who, fn, list(snap)
        self.umask, self.noatime, self.known, self.acl = umask, noatime, known, acl
        self.drop = drop  # the NFSv4 side's snapshot drops the client's caches first (setacl)


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
        self.acl = False  # whether the steps added compare the objects' ACLs too

    def add(self, name, who, fn, snap, umask=0o022, noatime=False, known=None, drop=False):
        self.steps.append(Step(name, who, fn, snap, umask, noatime, known, self.acl, drop))

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

    def setacl(self, who, rel, access, default=None, is_dir=False, v3args=None, masked=False,
               known=None):
        """Sets rel's ACL to `access` (and a directory's default ACL to `default`, or none); with
        v3args, locally and on NFSv3 that setfacl command instead, which must give the same.
        An NFSv4 ACL says what each principal may do after the mask, and the server's mapping
        back makes the mask the union of what the owning group and the named entries then
        have (docs/acl.md): an ACL whose mask is something else has no NFSv4 form, so none is
        set here. A named entry with bits the mask takes away (masked=True) is set without
        them through NFSv4 (the same ACL to every check and to the NFSv4 view): no later step
        may widen that file's mask."""
        acc = parse_acl(access)
        dflt = parse_acl(default) if default else None
        for acl in (acc, dflt) if dflt else (acc,):
            mask = next((p for t, _, p in acl if t == ACL_MASK), None)
            if mask is None:
                continue
            union, beyond = 0, 0
            for t, _, p in acl:
                if t in (ACL_USER, ACL_GROUP_OBJ, ACL_GROUP):
                    union |= p & mask
                    beyond |= p & ~mask
            assert mask == union, f"{rel}: mask of {acl_str(acl)} is not what NFSv4 can express"
            assert masked or not beyond, f"{rel}: {acl_str(acl)} has masked bits (masked=True)"
        what = " ".join(v3args) if v3args else access + (f" default {default}" if default else "")
        self.add(f"setacl {what} {rel}", who, op_setacl(rel, acc, dflt, is_dir, v3args),
                 _parents([rel]), known=known, drop=True)

    def getacl(self, who, rel):
        self.add(f"getacl {rel}", who, op_getacl(rel), [rel])

    def listdir(self, who, rel):
        self.add(f"listdir {rel}", who, op_list(rel), [rel], noatime=True)

    def create_sent(self, who, rel, mode=0o666, excl=True, data=b"", umask=0o022):
        """create, with the mode an NFSv4.0/4.1 client sends on the local side (_sent_mode)."""
        self.add(f"create{' excl' if excl else ''} {mode:o} umask {umask:03o} {rel}", who,
                 op_create_sent(rel, mode, excl, data), _parents([rel]), umask)

    def mkdir_sent(self, who, rel, mode=0o777):
        self.add(f"mkdir {mode:o} {rel}", who, op_mkdir_sent(rel, mode), _parents([rel]))

    def mkfifo_sent(self, who, rel, mode=0o666):
        self.add(f"mkfifo {mode:o} {rel}", who, op_mkfifo_sent(rel, mode), _parents([rel]))

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


def build_plan(vers="3"):
    """The sequence for NFS version `vers`. Names are fresh within it; every object stays
    until the end."""
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
    acl_plan(pl, vers)
    return pl


def acl_plan(pl, vers):
    """POSIX ACL steps, every object's ACLs compared too (acl_view). A owns what they make; C
    (1003) is the user named in the entries, in none of the owning groups; D is a member of
    the group named in them (2100); B is other."""
    pl.acl = True
    RD, WR, RW = os.O_RDONLY, os.O_WRONLY, os.O_RDWR
    opens = ((RD, "O_RDONLY"), (WR, "O_WRONLY"), (RW, "O_RDWR"))

    def access(rel, users=(ROOT, A, C, D, B)):
        for u in users:
            pl.open_each(u, rel, opens)

    pl.mkdir(ROOT, "acl")
    pl.chmod(ROOT, "acl", 0o777)

    # set, by the owner (and root) only; the named user reads and writes, the member only
    # reads, other neither. (Every set changes the ACL: setfacl leaves an ACL it would not
    # change alone, nfs4_setfacl sets it all the same, which changes the ctime.)
    f = "acl/f"
    f1 = "u::rw-,u:1003:rw-,g::r--,g:2100:r--,m::rw-,o::---"
    pl.create(A, f, 0o640, data=b"acl")
    pl.setacl(C, f, f1)  # EPERM: not the owner
    pl.setacl(A, f, f1)  # mode 0660: the mask is the group bits
    access(f)
    pl.write1(C, f)
    pl.write1(D, f)  # EACCES
    pl.truncate(C, f, 2)
    pl.truncate(D, f, 1)  # EACCES
    pl.utimens(C, f, NOW, NOW)  # write permission through the ACL suffices
    pl.utimens(D, f, NOW, NOW)  # EACCES
    pl.getacl(B, f)
    pl.setacl(B, f, "u::rw-,g::r--,o::rw-")  # EPERM
    pl.setacl(ROOT, f, "u::rw-,u:1003:rw-,g::r--,g:2100:r--,m::rw-,o::r--")
    access(f, (B,))
    pl.setacl(ROOT, f, f1)
    # chmod sets the mask, not the owning group's entry
    pl.chmod(A, f, 0o600)
    access(f, (C, D))  # EACCES: mask ---
    pl.chmod(A, f, 0o660)
    access(f, (C,))
    pl.chmod(C, f, 0o666)  # EPERM
    # the owner's entry is whoever owns the file: chown by root
    pl.chown(ROOT, f, B.uid, -1)
    access(f, (A, B))  # A now by the owning group's entry (1001), B by the owner's
    pl.chown(ROOT, f, A.uid, -1)
    # a mask takes a right away from the named user (and from nobody else here)
    pl.setacl(A, f, "u::rw-,u:1003:rw-,g::r--,g:2100:r--,m::r--,o::---", v3args=["-m", "m::r"],
              masked=True)
    access(f, (C, D))
    pl.getacl(C, f)
    # a group entry grants its member what the owning group's entry does not
    pl.setacl(A, f, "u::rw-,u:1003:r--,g::r--,g:2100:rw-,m::rw-,o::---")
    access(f, (C, D))
    pl.write1(D, f)
    # a member of a named group has that entry's rights, even where other's are more (no
    # falling back to other); C, named in no entry, is other
    pl.setacl(A, f, "u::rw-,g::---,g:2100:r--,m::r--,o::rw-")
    access(f, (C, D, B))
    # the same for a named user
    pl.setacl(A, f, "u::rw-,u:1003:---,g::r--,g:2100:r--,m::r--,o::r--",
              v3args=["-m", "u:1003:-,g::r,o::r"])
    access(f, (C, D, B))
    pl.setacl(A, f, "u::rw-,g::r--,g:2100:r--,m::r--,o::r--", v3args=["-x", "u:1003"])
    access(f, (C,))
    pl.setacl(A, f, "u::rw-,g::r--,o::r--", v3args=["-b"])  # no ACL: the mode alone, 0644
    access(f, (C, D))

    # a directory: the named user creates, renames and removes in it, the member lists it,
    # other may not search it; then search only for the named user, nothing for the member
    # (whom other's search right does not help)
    d = "acl/d"
    pl.mkdir(A, d, 0o750)
    pl.create(A, f"{d}/f0", 0o644, data=b"x")
    pl.setacl(A, d, "u::rwx,u:1003:rwx,g::r-x,g:2100:r-x,m::rwx,o::---", is_dir=True)
    pl.create(C, f"{d}/c_C", 0o644)
    pl.mkdir(C, f"{d}/m_C")
    pl.create(D, f"{d}/c_D")  # EACCES
    pl.listdir(D, d)
    pl.listdir(B, d)  # EACCES
    pl.open_each(B, f"{d}/f0", opens)  # EACCES: no search
    pl.open_each(D, f"{d}/f0", opens)
    pl.rename(C, f"{d}/f0", f"{d}/f1")
    pl.unlink(D, f"{d}/f1")  # EACCES
    pl.setacl(A, d, "u::rwx,u:1003:--x,g::r-x,g:2100:---,m::r-x,o::--x", is_dir=True)
    pl.listdir(C, d)  # EACCES
    pl.open_each(C, f"{d}/c_C", opens)
    pl.create(C, f"{d}/c2_C")  # EACCES
    pl.rmdir(C, f"{d}/m_C")  # EACCES
    pl.open_each(D, f"{d}/f1", opens)  # EACCES
    pl.open_each(B, f"{d}/f1", opens)
    pl.getacl(D, f"{d}/f1")  # EACCES

    # inherit: a default ACL; files (open O_CREAT, O_CREAT|O_EXCL), directories and a FIFO
    # made in it get it with the mode asked for, the umask ignored (_sent_mode: not with
    # NFSv4.0/4.1), a directory also as its own default ACL
    i = "acl/i"
    dflt = "u::rwx,u:1003:rwx,g::r-x,g:2100:r-x,m::rwx,o::---"
    pl.mkdir(A, i, 0o755)
    pl.setacl(A, i, "u::rwx,g::r-x,o::r-x", dflt, is_dir=True,
              v3args=["-d", "-m", "u:1003:rwx,g:2100:rx,o::-"])
    pl.getacl(B, i)
    made = (("f644", 0o644, False, 0o022), ("f666", 0o666, False, 0o022),
            ("x644", 0o644, True, 0o022), ("x666", 0o666, True, 0o022),
            ("u077", 0o666, False, 0o077))
    for name, mode, excl, umask in made:
        pl.create_sent(A, f"{i}/{name}", mode, excl, umask=umask)
    pl.mkdir_sent(A, f"{i}/sub777", 0o777)
    pl.mkdir_sent(A, f"{i}/sub750", 0o750)
    pl.mkfifo_sent(A, f"{i}/p666", 0o666)
    for name, *_ in made:
        access(f"{i}/{name}", (C, D, B))
    pl.write1(C, f"{i}/f666")
    pl.write1(C, f"{i}/x666")
    pl.create_sent(C, f"{i}/sub777/c666")  # the named user, in the new directory
    pl.mkdir_sent(C, f"{i}/sub777/csub", 0o777)
    pl.create_sent(D, f"{i}/sub777/d666")  # EACCES
    pl.create_sent(C, f"{i}/sub750/c666")  # EACCES: its mask is r-x
    access(f"{i}/sub777/c666", (A, D, B))
    pl.listdir(B, f"{i}/sub777")  # EACCES
    pl.listdir(B, i)
    pl.create_sent(B, f"{i}/b666")  # EACCES
    pl.rename(A, f"{i}/f666", "acl/f666")  # the ACL goes with the file
    # a default ACL of the three base entries: the mode's bits it lacks are taken away, not
    # the umask's
    j = "acl/j"
    pl.mkdir(A, j, 0o755)
    pl.setacl(A, j, "u::rwx,g::r-x,o::r-x", "u::rwx,g::---,o::---", is_dir=True,
              v3args=["-d", "--set", "u::rwx,g::-,o::-"])
    pl.create_sent(A, f"{j}/f666", 0o666, excl=False)  # 0600
    pl.mkdir_sent(A, f"{j}/s777", 0o777)  # 0700, the same default ACL
    pl.create_sent(A, f"{j}/s777/f", 0o644)
    access(f"{j}/f666", (D, B))
    # the default ACL removed (NFSv4: an ACL without inheritable ACEs; KNOWN "default-kept"),
    # then the umask applies again. Not after an NFSv4 removal, which a server that keeps the
    # default ACL (knfsd) would make a series of differences of
    pl.setacl(A, i, "u::rwx,g::r-x,o::r-x", is_dir=True, v3args=["-k"], known="default-kept")
    if vers not in V4:
        pl.create_sent(A, f"{i}/after", 0o666)
        pl.mkdir_sent(A, f"{i}/after_d", 0o777)
    pl.acl = False


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


def drop_caches():
    """Writes back and forgets the cached pages, dentries and inodes (the NFS client's too)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Where:
    """What a step's fn gets as p: p(rel) is the side's path of rel; p.nfs tells the NFS side
    from the local one, p.vers is the NFS version under test ("3", "4.0", "4.1", "4.2"; "local"
    when the directory under test is not on NFS, which runs like NFSv3)."""

    def __init__(self, base, nfs, vers):
        self.base, self.nfs, self.vers = base, nfs, vers

    def __call__(self, rel):
        return os.path.join(self.base, rel) if rel else self.base


class Side:
    def __init__(self, label, base, vers):
        self.label, self.base = label, base
        self.where = Where(base, label == "nfs", vers)
        self.prev = {}  # st_ino -> (atime, mtime, ctime) when this side last looked
        self.last_end = 0.0

    def path(self, rel):
        return self.where(rel)

    def run(self, step):
        """Runs the step; returns its record {field: text} and the number of calls in it."""
        wait = self.last_end + GAP - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        t0 = time.time_ns()
        res = run_as(step.who, step.umask, lambda res: step.fn(res, self.where))
        t1 = time.time_ns()
        if step.drop and self.where.nfs and self.where.vers in V4:
            # Setting an ACL changes the mode; the Linux client (6.12) then marks only the
            # change attribute and ctime stale (__nfs4_proc_set_acl), keeps a write delegation
            # it holds (nfs4_inode_make_writeable, NFSv4.1+) and, holding one, leaves the mode
            # out of its GETATTRs (nfs4_bitmap_copy_adjust): statx shows the old mode even with
            # AT_STATX_FORCE_SYNC. Dropping the client's caches evicts the inode, which returns
            # the delegation, so the snapshot gets the server's mode. (knfsd grants write
            # delegations; rnfsd only with --write-delegations.)
            drop_caches()
        self.last_end = time.monotonic()
        rec = {"result": " ".join(res).replace(self.base, "<dir>")}
        for rel in step.snap:
            self.snapshot(rec, rel or ".", self.path(rel), t0, t1, step.noatime, step.acl)
        return rec, len(res)

    def snapshot(self, rec, rel, path, t0, t1, noatime, acl=False):
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
        if acl and not stat.S_ISLNK(st.mode):
            try:
                rec[f"{rel} acl"] = acl_view(path, st.mode, self.where.nfs, self.where.vers)
            except OSError as e:
                rec[f"{rel} acl"] = errname(e.errno)


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


ACL_COMPARED = {
    "3": "set with setfacl on both sides (NFSACL), getfacl and the stored ACLs compared",
    "4.0": "set with nfs4_setfacl on the mount, NFSv4 ACLs compared; creates under a default "
           "ACL compared with the mode the client sends (umask applied; O_EXCL: mode 0 + chmod)",
    "4.1": "set with nfs4_setfacl on the mount, NFSv4 ACLs compared; creates under a default "
           "ACL compared with the mode the client sends (umask applied)",
    "4.2": "set with nfs4_setfacl on the mount, NFSv4 ACLs compared; creates with mode_umask",
}


def nfs_version(path):
    """The NFS version of the mount `path` is on ("3", "4.0", "4.1", "4.2"), from the vers=
    option in /proc/mounts; "local" when it is not on NFS."""
    path = os.path.realpath(path)
    best, vers = "", "local"
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            mp = fields[1].replace("\\040", " ")
            if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
                best, vers = mp, "local"
                if fields[2] in ("nfs", "nfs4"):
                    opts = dict(o.split("=", 1) for o in fields[3].split(",") if "=" in o)
                    vers = opts.get("vers", "4.0" if fields[2] == "nfs4" else "3")
                    vers = {"4": "4.0", "3.0": "3"}.get(vers, vers)
    return vers


def preflight(local_base, vers):
    """The ACL steps need setfacl and getfacl (and nfs4_setfacl with NFSv4) and a local
    reference with POSIX ACLs (Debian's tmpfs has them)."""
    tools = ["setfacl", "getfacl"] + (["nfs4_setfacl"] if vers in V4 else [])
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} missing (packages acl, nfs4-acl-tools)")
    probe = os.path.join(local_base, "acl-probe")
    with open(probe, "w"):
        pass
    try:
        p = subprocess.run(["setfacl", "-m", "u:1003:r", probe], capture_output=True, text=True)
        if p.returncode != 0 or read_posix_acl(probe) is None:
            raise RuntimeError(f"the local reference {local_base} has no POSIX ACLs: "
                               f"{' '.join((p.stderr or 'no ACL set').split())}")
    finally:
        os.unlink(probe)


def run(local_dir, nfs_dir, log=print, show=False, vers=None, domain=None):
    """Runs the plan in local_dir/px and nfs_dir/px (both created, removed at the end, as root)
    and returns the Report; each difference goes to log as it is found (with show, every
    step's local record too). vers: the NFS version of nfs_dir's mount (default: from
    /proc/mounts); domain: the NFSv4 domain of the ACLs' who-names (WHO_DOMAIN; on a Kerberos
    mount, where the test users must have names in the user and group databases)."""
    global WHO_DOMAIN
    if os.geteuid() != 0:
        raise PermissionError("posixdiff needs root (it switches to the test users)")
    WHO_DOMAIN = domain
    vers = vers or nfs_version(nfs_dir)
    sides = []
    old_umask = os.umask(0o022)
    try:
        for label, top in (("local", local_dir), ("nfs", nfs_dir)):
            base = os.path.join(top, WORKDIR)
            if os.path.lexists(base):
                shutil.rmtree(base)
            os.mkdir(base)
            os.chmod(base, 0o777)
            sides.append(Side(label, base, vers))
        loc, nfs = sides
        preflight(loc.base, vers)
        log(f"ACL steps for {'NFSv' + vers if vers != 'local' else 'a local directory'}: "
            + ACL_COMPARED.get(vers, ACL_COMPARED["3"]))
        rep = Report()
        for i, step in enumerate(build_plan(vers).steps, 1):
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
    ap.add_argument("--vers", help="NFS version of the mount (default: from /proc/mounts)")
    ap.add_argument("--domain", help="NFSv4 domain of ACL who-names (a Kerberos mount)")
    a = ap.parse_args()
    rep = run(a.local, a.nfs, show=a.show, vers=a.vers, domain=a.domain)
    for _, _, _, reason in rep.expected:
        print(f"  expected because: {reason}")
    print(rep.summary())
    return 1 if rep.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
