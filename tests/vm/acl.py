#!/usr/bin/env python3
"""POSIX ACLs through the kernel NFS client on one mount, for the "acl" case of tests/vm/run.
Runs as root in the guest, where the exported directory is also at hand (--server-dir: the
export as the server sees it). Each client step runs in a child process that has become one of
four users (setgroups, setgid, setuid, umask 022):

  owner   makes the files and directories and sets their ACLs
  named   the user named in the ACLs
  member  a member (supplementary group) of the group named in the ACLs
  other   in neither

NFSv3 mounts (setfacl and getfacl on the client, through the NFSACL protocol):
  check      the owner makes the case's directory (0755) through the mount; the export's file
             system keeps POSIX ACLs (setfacl and getfacl on it directly, as root)
  v3file     a 0640 file: setfacl -m u:NAMED:rw, then -m g:GROUP:r, then -m m::r; after each
             getfacl on the client and on the server shows the expected ACL and the mode's group
             bits follow the mask; then owner reads and writes, named and member read but may
             not write (masked out), other may do neither; named's setfacl on it is refused
  v3dir      a 0750 directory with u:NAMED:rwx,g:GROUP:rx: named creates a file in it, member
             lists it but may not create, other may do neither; after -m m::rx named may not
             create either
  v3default  setfacl -d -m u:NAMED:rwx,g:GROUP:rx,o::- on a 0755 directory; files made in it
             through the mount with open(O_CREAT) and with O_EXCL (mode 0666) and a directory
             (0777) inherit it, the umask 022 ignored as POSIX wants under a default ACL (the v3
             client sends the mode as asked, and the ACLs with SETACL), the directory also as
             its default ACL; named writes the files, member only reads them, other neither;
             named makes a file in the new directory, which inherits the ACL too
NFSv4.x mounts (nfs4_setfacl and nfs4_getfacl on the client, the acl attribute; who-names are
numeric: the Linux client sends and both servers send and take numbers with AUTH_SYS):
  check      as above
  v4file     a 0640 file: nfs4_setfacl -a A::NAMED:rwa (a POSIX w needs WRITE_DATA and
             APPEND_DATA), then -a A:g:GROUP:r, then -a D::NAMED:wa (a DENY, first); after each
             the server's POSIX ACL and the client's nfs4_getfacl are the ones knfsd's mapping
             gives (docs/acl.md); named reads and writes after the first, member reads after the
             second, after the DENY neither named nor the owner may write (a DENY to a named user
             is a DENY to the owner, who may be that user), other may do nothing; named's
             nfs4_setfacl on it is refused
  v4mask     a 0640 file given u:NAMED:rw,g:GROUP:rw,m::r on the server: nfs4_getfacl on the
             client shows the mask applied, named and member read but may not write
  v4dir      a 0750 directory with nfs4_setfacl -a A::NAMED:rwaDx: named creates a file in it,
             member and other may neither list nor create
  v4inherit  nfs4_setfacl -s of file- and directory-inherit ACEs (and EVERYONE@ allowed to
             search) makes a directory's default ACL (server getfacl); files made in it through
             the mount with open(O_CREAT) (UNCHECKED4) and with O_EXCL (EXCLUSIVE4_1, or with
             NFSv4.0 EXCLUSIVE4 and then a SETATTR of the mode: a chmod of a file made with
             mode 0) and a directory inherit it. NFSv4.2 clients send the umask apart
             (mode_umask, RFC 8275) when the server has the attribute, and the server then
             ignores it under a default ACL, as POSIX does: the files' mask keeps w and named
             may write them. NFSv4.0 and 4.1 cannot say, so the client applies the umask 022 to
             the mode it sends: the mask loses w. Other may search the directory but read
             neither file (the default ACL's other::---), except on NFSv4.0 the O_EXCL file,
             which the SETATTR (a chmod to 0644) makes readable
  cleanup    everything made is removed (as root); the mount's directory is as before

Every observation (ACLs seen on each side, modes, each user's attempts) goes to --transcript
as KEY = VALUE lines. With --reference (knfsd's transcript of the same combination), a last
step, same, requires every observation to be the same as knfsd's.

Prints one "sub=NAME status=PASS|FAIL time=SECS reason=TEXT" line per step; exit status 1
when any failed.
"""
import argparse
import errno
import os
import shutil
import subprocess
import sys
import time

import asuser
from asuser import Failed, drop_caches, ename, try_errno


def as_user(user, fn, *args):
    """asuser.as_user with umask 022, as a user's shell has it."""
    return asuser.as_user(user, fn, *args, umask=0o022)



def parse_user(s):
    """NAME:UID:GID[:GID2,...] -> (name, uid, gid, [supplementary gids])."""
    parts = s.split(":")
    groups = [int(g) for g in parts[3].split(",")] if len(parts) > 3 and parts[3] else []
    return (parts[0], int(parts[1]), int(parts[2]), groups)


def parse_group(s):
    name, gid = s.split(":")
    return (name, int(gid))


STRERRORS = sorted(((os.strerror(n), name) for n, name in errno.errorcode.items()),
                   key=lambda x: -len(x[0]))


def error_of(text):
    """The errno name a tool's message names (e.g. 'Operation not permitted' -> EPERM)."""
    for s, name in STRERRORS:
        if s and s in text:
            return name
    return " ".join(text.split())[:120] or "failed"


def run(argv):
    """Runs a command; (0, output) or (status, error name from its message)."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if p.returncode == 0:
        return 0, p.stdout
    return p.returncode, error_of(p.stderr + p.stdout)


# --- what the children do ---------------------------------------------------------------------

def u_run(argv):
    return run(argv)


def op_read(p):
    fd = os.open(p, os.O_RDONLY)
    try:
        os.read(fd, 1)
    finally:
        os.close(fd)


def op_write(p):
    fd = os.open(p, os.O_WRONLY)
    try:
        os.pwrite(fd, b"w", 0)
        os.fsync(fd)
    finally:
        os.close(fd)


def op_list(p):
    os.listdir(p)


def op_create(p):
    os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


OPS = {"read": op_read, "write": op_write, "list": op_list, "create": op_create}


def u_attempts(ops):
    return [try_errno(lambda: OPS[op](p)) for op, p in ops]


def u_make_file(p, mode, data, excl=True):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | (os.O_EXCL if excl else 0), 0o666)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    if mode is not None:
        os.chmod(p, mode)


def u_mkdir(p, mode, chmod):
    os.mkdir(p, mode)
    if chmod:
        os.chmod(p, mode)


# --- POSIX ACLs as getfacl -c -n prints them -------------------------------------------------

def perm_bits(s):
    return (4 if s[0] == "r" else 0) | (2 if s[1] == "w" else 0) | (1 if s[2] == "x" else 0)


def perm_str(b):
    return ("r" if b & 4 else "-") + ("w" if b & 2 else "-") + ("x" if b & 1 else "-")


def parse_entries(entries):
    """["user::rw-", "user:2201:rw-", ...] -> [(tag, qualifier, bits)]."""
    out = []
    for e in entries:
        tag, q, p = e.split(":")
        out.append((tag, q, perm_bits(p)))
    return out


def getfacl_lines(entries, prefix=""):
    """What getfacl -c -n prints for these entries (whitespace collapsed): '#effective:' where
    the mask takes bits away from a named user, the owning group or a named group."""
    es = parse_entries(entries)
    mask = next((b for t, _, b in es if t == "mask"), None)
    out = []
    for t, q, b in es:
        line = f"{prefix}{t}:{q}:{perm_str(b)}"
        if mask is not None and (t == "group" or (t == "user" and q)) and b & ~mask:
            line += f" #effective:{perm_str(b & mask)}"
        out.append(line)
    return out


def posix(access, default=None):
    return getfacl_lines(access) + (getfacl_lines(default, "default:") if default else [])


def mode_of(access):
    """The permission bits a file with this access ACL has: owner, mask (or group), other."""
    es = parse_entries(access)
    own = next(b for t, q, b in es if t == "user" and not q)
    grp = next((b for t, _, b in es if t == "mask"), None)
    if grp is None:
        grp = next(b for t, q, b in es if t == "group" and not q)
    oth = next(b for t, _, b in es if t == "other")
    return (own << 6) | (grp << 3) | oth


def norm_getfacl(text):
    return [" ".join(ln.split()) for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


# --- NFSv4 ACLs: knfsd's mapping of a POSIX ACL (fs/nfsd/nfs4acl.c, _posix_to_nfsv4_one) ------

def _mask(bits, is_dir, owner=False):
    m = set("tcy")
    if owner:
        m |= set("TC")
    return m | _deny(bits, is_dir)


def _deny(bits, is_dir):
    m = set()
    if bits & 4:
        m.add("r")
    if bits & 2:
        m |= set("wa") | ({"D"} if is_dir else set())
    if bits & 1:
        m.add("x")
    return m


def nfs4_of_posix(entries, is_dir, default=False):
    """The ACEs (type, flags, who, perms) knfsd sends for one POSIX ACL."""
    es = parse_entries(entries)
    mask = next((b for t, _, b in es if t == "mask"), 7)
    owner = next(b for t, q, b in es if t == "user" and not q)
    group = next(b for t, q, b in es if t == "group" and not q) & mask
    other = next(b for t, _, b in es if t == "other")
    nusers = [(q, b) for t, q, b in es if t == "user" and q]
    ngroups = [(q, b) for t, q, b in es if t == "group" and q]
    users = 0
    for _, b in nusers:
        users |= b & mask
    groups = 0
    for _, b in ngroups:
        groups |= b & mask
    ef = set("fdi") if default else set()
    aces = []
    deny = ~owner & (users | group | groups | other) & 7
    if deny:
        aces.append(("D", ef, "OWNER@", _deny(deny, is_dir)))
    aces.append(("A", ef, "OWNER@", _mask(owner, is_dir, owner=True)))
    for q, b in nusers:
        deny = ~(b & mask) & (groups | group | other) & 7
        if deny:
            aces.append(("D", ef, q, _deny(deny, is_dir)))
        aces.append(("A", ef, q, _mask(b & mask, is_dir)))
    aces.append(("A", ef, "GROUP@", _mask(group, is_dir)))
    for q, b in ngroups:
        aces.append(("A", ef | {"g"}, q, _mask(b & mask, is_dir)))
    deny = ~group & other & 7
    if deny:
        aces.append(("D", ef, "GROUP@", _deny(deny, is_dir)))
    for q, b in ngroups:
        deny = ~(b & mask) & other & 7
        if deny:
            aces.append(("D", ef | {"g"}, q, _deny(deny, is_dir)))
    aces.append(("A", ef, "EVERYONE@", _mask(other, is_dir)))
    return [canon_ace(*a) for a in aces]


def nfs4_expected(access, is_dir, default=None):
    out = nfs4_of_posix(access, is_dir)
    if default:
        out += nfs4_of_posix(default, is_dir, default=True)
    return out


# nfs4_getfacl's letters for directories (list, add file, add subdirectory) are the same bits as
# r, w and a
PERM_ALIAS = {"l": "r", "f": "w", "s": "a"}
# the order nfs4_getfacl prints them in
PERM_ORDER = "rwaDdxtTnNcCoy"
FLAG_ORDER = "fdniSFg"


def canon_ace(typ, flags, who, perms):
    flags = set(flags)
    if who in ("OWNER@", "GROUP@", "EVERYONE@"):
        flags.discard("g")  # nfs4-acl-tools marks GROUP@ with g, knfsd does not
    perms = {PERM_ALIAS.get(p, p) for p in perms}
    return (f"{typ}:{''.join(sorted(flags, key=lambda c: (FLAG_ORDER + c).index(c)))}:{who}:"
            f"{''.join(sorted(perms, key=lambda c: (PERM_ORDER + c).index(c)))}")


def norm_nfs4(text):
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        parts = ln.split(":")
        if len(parts) != 4:
            out.append(ln)
            continue
        out.append(canon_ace(parts[0], parts[1], parts[2], parts[3]))
    return out


# --- the run ---------------------------------------------------------------------------------

class Run:
    def __init__(self, a):
        self.a = a
        self.v3 = a.vers == "3"
        self.top = os.path.join(a.dir, f"acl-{a.tag}")
        self.stop = os.path.join(a.server_dir, f"acl-{a.tag}")
        self.users = {"owner": a.owner, "named": a.named, "member": a.member, "other": a.other}
        self.obs = []  # (key, value) in order
        self.problems = []

    # observations and expectations
    def note(self, key, value):
        if isinstance(value, list):
            value = " | ".join(value)
        self.obs.append((key, str(value)))
        print(f"  {key} = {value}", flush=True)

    def want(self, key, got, exp):
        self.note(key, got)
        if got != exp:
            g = " | ".join(got) if isinstance(got, list) else got
            e = " | ".join(exp) if isinstance(exp, list) else exp
            self.problems.append(f"{key}: got {g}, want {e}")

    def cpath(self, rel):
        return os.path.join(self.top, rel)

    def spath(self, rel):
        return os.path.join(self.stop, rel)

    # tools
    def setfacl(self, who, args, rel, key, expect_err=None):
        rc, out = as_user(self.users[who], u_run, ["setfacl", *args, self.cpath(rel)])
        got = "ok" if rc == 0 else out
        self.want(f"{key} setfacl {' '.join(args)} ({who})", got, expect_err or "ok")
        return rc == 0

    def nfs4_setfacl(self, who, args, rel, key, expect_err=None):
        rc, out = as_user(self.users[who], u_run, ["nfs4_setfacl", *args, self.cpath(rel)])
        got = "ok" if rc == 0 else out
        self.want(f"{key} nfs4_setfacl {' '.join(args)} ({who})", got, expect_err or "ok")
        return rc == 0

    def server_setfacl(self, args, rel, key):
        rc, out = run(["setfacl", *args, self.spath(rel)])
        self.want(f"{key} server setfacl {' '.join(args)}", "ok" if rc == 0 else out, "ok")

    def see(self, rel, key, access, default=None, is_dir=False):
        """The ACL of rel as the server keeps it (getfacl on the export), its mode on both sides,
        and as the client shows it: getfacl (NFSv3) or nfs4_getfacl (NFSv4)."""
        exp = posix(access, default)
        rc, out = run(["getfacl", "-c", "-n", self.spath(rel)])
        self.want(f"{key} server getfacl {rel}", norm_getfacl(out) if rc == 0 else [out], exp)
        mode = f"{mode_of(access):04o}"
        self.want(f"{key} server mode {rel}", f"{os.stat(self.spath(rel)).st_mode & 0o7777:04o}", mode)
        drop_caches()
        self.want(f"{key} client mode {rel}", f"{os.stat(self.cpath(rel)).st_mode & 0o7777:04o}", mode)
        if self.v3:
            rc, out = as_user(self.users["owner"], u_run, ["getfacl", "-c", "-n", self.cpath(rel)])
            self.want(f"{key} client getfacl {rel}", norm_getfacl(out) if rc == 0 else [out], exp)
        else:
            rc, out = as_user(self.users["owner"], u_run, ["nfs4_getfacl", self.cpath(rel)])
            self.want(f"{key} client nfs4_getfacl {rel}", norm_nfs4(out) if rc == 0 else [out],
                      nfs4_expected(access, is_dir, default))

    def attempts(self, key, table):
        """table: {user: [(op, rel, expected errno name or None)]}; after dropping caches each
        user tries its operations (in one child)."""
        drop_caches()
        for who, ops in table.items():
            got = as_user(self.users[who], u_attempts, [(op, self.cpath(rel)) for op, rel, _ in ops])
            for (op, rel, exp), g in zip(ops, got):
                self.want(f"{key} {who} {op} {rel}", g or "ok", exp or "ok")

    # steps
    def check(self):
        """The case's directory, made by the owner through the mount; the export's file system
        keeps POSIX ACLs: one set there directly (as root) reads back."""
        as_user(self.users["owner"], u_mkdir, self.top, 0o755, True)
        probe = self.spath("probe")
        with open(probe, "w") as f:
            f.write("probe\n")
        rc, out = run(["setfacl", "-m", f"u:{self.a.named[1]}:r", probe])
        if rc != 0:
            raise Failed(f"setfacl on the export's file system failed: {out} (no POSIX ACLs?)")
        rc, out = run(["getfacl", "-c", "-n", probe])
        if rc != 0 or f"user:{self.a.named[1]}:r--" not in norm_getfacl(out):
            raise Failed(f"getfacl on the export's file system: {out}")
        os.unlink(probe)

    def v3file(self):
        n, m, g = self.a.named, self.a.member, self.a.group
        nid, gid = n[1], g[1]
        as_user(self.users["owner"], u_make_file, self.cpath("f"), 0o640, b"data\n")
        self.see("f", "v3file 0640", ["user::rw-", "group::r--", "other::---"])
        self.setfacl("owner", ["-m", f"u:{n[0]}:rw"], "f", "v3file")
        self.see("f", "v3file +user", ["user::rw-", f"user:{nid}:rw-", "group::r--", "mask::rw-",
                                       "other::---"])
        self.setfacl("owner", ["-m", f"g:{g[0]}:r"], "f", "v3file")
        self.see("f", "v3file +group", ["user::rw-", f"user:{nid}:rw-", "group::r--",
                                        f"group:{gid}:r--", "mask::rw-", "other::---"])
        self.setfacl("owner", ["-m", "m::r"], "f", "v3file")
        final = ["user::rw-", f"user:{nid}:rw-", "group::r--", f"group:{gid}:r--", "mask::r--",
                 "other::---"]
        self.see("f", "v3file +mask", final)
        self.attempts("v3file", {
            "owner": [("read", "f", None), ("write", "f", None)],
            "named": [("read", "f", None), ("write", "f", "EACCES")],
            "member": [("read", "f", None), ("write", "f", "EACCES")],
            "other": [("read", "f", "EACCES"), ("write", "f", "EACCES")]})
        self.setfacl("named", ["-m", f"u:{m[0]}:rw"], "f", "v3file", expect_err="EPERM")
        self.see("f", "v3file after named's setfacl", final)

    def v3dir(self):
        n, g = self.a.named, self.a.group
        as_user(self.users["owner"], u_mkdir, self.cpath("s"), 0o750, True)
        self.setfacl("owner", ["-m", f"u:{n[0]}:rwx,g:{g[0]}:rx"], "s", "v3dir")
        self.see("s", "v3dir", ["user::rwx", f"user:{n[1]}:rwx", "group::r-x", f"group:{g[1]}:r-x",
                                "mask::rwx", "other::---"], is_dir=True)
        self.attempts("v3dir", {
            "named": [("create", "s/by-named", None), ("list", "s", None)],
            "member": [("list", "s", None), ("create", "s/by-member", "EACCES")],
            "other": [("list", "s", "EACCES"), ("create", "s/by-other", "EACCES")]})
        self.setfacl("owner", ["-m", "m::rx"], "s", "v3dir")
        self.see("s", "v3dir +mask", ["user::rwx", f"user:{n[1]}:rwx", "group::r-x",
                                      f"group:{g[1]}:r-x", "mask::r-x", "other::---"], is_dir=True)
        self.attempts("v3dir +mask", {
            "named": [("create", "s/by-named-2", "EACCES"), ("list", "s", None)]})

    def inherited(self, mode, chmod=False):
        """The access ACL a file or directory made with `mode` under the default ACL
        u:NAMED:rwx,g:GROUP:rx,o::- (mask rwx) gets: the mode's bits limit the owner, mask and
        other entries (posix_acl_create). With chmod, the file was made with mode 0 and then
        given `mode` (a chmod sets the owner, mask and other entries to the mode's bits)."""
        n, g = self.a.named[1], self.a.group[1]
        own, grp, oth = (mode >> 6) & 7, (mode >> 3) & 7, mode & 7
        if not chmod:
            oth = 0  # the default ACL's other::---
        return ["user::" + perm_str(own), f"user:{n}:rwx", "group::r-x", f"group:{g}:r-x",
                "mask::" + perm_str(grp), "other::" + perm_str(oth)]

    def default_acl(self):
        n, g = self.a.named[1], self.a.group[1]
        return ["user::rwx", f"user:{n}:rwx", "group::r-x", f"group:{g}:r-x", "mask::rwx", "other::---"]

    def v3default(self):
        n, g = self.a.named, self.a.group
        as_user(self.users["owner"], u_mkdir, self.cpath("d"), 0o755, True)
        self.setfacl("owner", ["-d", "-m", f"u:{n[0]}:rwx,g:{g[0]}:rx,o::-"], "d", "v3default")
        dflt = self.default_acl()
        self.see("d", "v3default", ["user::rwx", "group::r-x", "other::r-x"], dflt, is_dir=True)
        # the umask (022) does not apply under a default ACL: the v3 client sends the mode as
        # asked and the ACLs it computes (SETACL); O_EXCL makes an EXCLUSIVE create + SETATTR
        as_user(self.users["owner"], u_make_file, self.cpath("d/f"), None, b"data\n", False)
        as_user(self.users["owner"], u_make_file, self.cpath("d/x"), None, b"data\n", True)
        as_user(self.users["owner"], u_mkdir, self.cpath("d/sub"), 0o777, False)
        f = self.inherited(0o666)
        self.see("d/f", "v3default inherited", f)
        self.see("d/x", "v3default inherited (O_EXCL)", f)
        self.see("d/sub", "v3default inherited", self.inherited(0o777), dflt, is_dir=True)
        self.attempts("v3default", {
            "named": [("write", "d/f", None), ("write", "d/x", None), ("create", "d/sub/by-named", None)],
            "member": [("read", "d/f", None), ("write", "d/f", "EACCES"), ("read", "d/x", None),
                       ("create", "d/sub/by-member", "EACCES")],
            "other": [("read", "d/f", "EACCES"), ("read", "d/x", "EACCES"), ("list", "d/sub", "EACCES")]})
        self.see("d/sub/by-named", "v3default inherited by named's file", f)

    def v4file(self):
        n, g = self.a.named[1], self.a.group[1]
        as_user(self.users["owner"], u_make_file, self.cpath("f"), 0o640, b"data\n")
        self.see("f", "v4file 0640", ["user::rw-", "group::r--", "other::---"])
        self.nfs4_setfacl("owner", ["-a", f"A::{n}:rwa"], "f", "v4file")
        self.see("f", "v4file +allow user", ["user::rw-", f"user:{n}:rw-", "group::r--", "mask::rw-",
                                             "other::---"])
        self.attempts("v4file +allow user", {
            "named": [("read", "f", None), ("write", "f", None)],
            "member": [("read", "f", "EACCES")],
            "other": [("read", "f", "EACCES")]})
        self.nfs4_setfacl("owner", ["-a", f"A:g:{g}:r"], "f", "v4file")
        self.see("f", "v4file +allow group", ["user::rw-", f"user:{n}:rw-", "group::r--",
                                              f"group:{g}:r--", "mask::rw-", "other::---"])
        self.nfs4_setfacl("owner", ["-a", f"D::{n}:wa"], "f", "v4file")
        final = ["user::r--", f"user:{n}:r--", "group::r--", f"group:{g}:r--", "mask::r--", "other::---"]
        self.see("f", "v4file +deny user", final)
        self.attempts("v4file +deny user", {
            "owner": [("read", "f", None), ("write", "f", "EACCES")],
            "named": [("read", "f", None), ("write", "f", "EACCES")],
            "member": [("read", "f", None), ("write", "f", "EACCES")],
            "other": [("read", "f", "EACCES"), ("write", "f", "EACCES")]})
        self.nfs4_setfacl("named", ["-a", f"A::{self.a.other[1]}:r"], "f", "v4file", expect_err="EPERM")
        self.see("f", "v4file after named's nfs4_setfacl", final)

    def v4mask(self):
        n, g = self.a.named[1], self.a.group[1]
        as_user(self.users["owner"], u_make_file, self.cpath("h"), 0o640, b"data\n")
        self.server_setfacl(["-m", f"u:{n}:rw,g:{g}:rw,m::r"], "h", "v4mask")
        self.see("h", "v4mask", ["user::rw-", f"user:{n}:rw-", "group::r--", f"group:{g}:rw-",
                                 "mask::r--", "other::---"])
        self.attempts("v4mask", {
            "owner": [("write", "h", None)],
            "named": [("read", "h", None), ("write", "h", "EACCES")],
            "member": [("read", "h", None), ("write", "h", "EACCES")],
            "other": [("read", "h", "EACCES")]})

    def v4dir(self):
        n = self.a.named[1]
        as_user(self.users["owner"], u_mkdir, self.cpath("s"), 0o750, True)
        self.nfs4_setfacl("owner", ["-a", f"A::{n}:rwaDx"], "s", "v4dir")
        self.see("s", "v4dir", ["user::rwx", f"user:{n}:rwx", "group::r-x", "mask::rwx", "other::---"],
                 is_dir=True)
        self.attempts("v4dir", {
            "named": [("create", "s/by-named", None), ("list", "s", None)],
            "member": [("list", "s", "EACCES"), ("create", "s/by-member", "EACCES")],
            "other": [("list", "s", "EACCES"), ("create", "s/by-other", "EACCES")]})

    def v4inherit(self):
        n, g = self.a.named[1], self.a.group[1]
        as_user(self.users["owner"], u_mkdir, self.cpath("i"), 0o755, True)
        # inherited (and effective) ACEs, and EVERYONE@ allowed to search the directory itself
        spec = ",".join(["A:fd:OWNER@:rwaDxtTcCy", f"A:fd:{n}:rwaDxtcy", "A:fd:GROUP@:rxtcy",
                         f"A:fdg:{g}:rxtcy", "A:fd:EVERYONE@:tcy", "A::EVERYONE@:x"])
        self.nfs4_setfacl("owner", ["-s", spec], "i", "v4inherit")
        dflt = self.default_acl()
        self.see("i", "v4inherit", dflt[:-1] + ["other::--x"], dflt, is_dir=True)
        # f: open(O_CREAT), an UNCHECKED4 create with the mode; x: open(O_CREAT|O_EXCL),
        # EXCLUSIVE4_1 with the mode among its attributes (4.1, 4.2) or EXCLUSIVE4 and then a
        # SETATTR of the mode (4.0: the file is made with mode 0, the SETATTR is a chmod); sub:
        # mkdir, CREATE with the mode. With NFSv4.2 the client sends its umask apart
        # (mode_umask) when the server has the attribute: knfsd then applies the default ACL
        # to 0666 (0777), the umask ignored as POSIX wants. Otherwise the client applies the
        # umask 022 itself and sends 0644 (0755).
        as_user(self.users["owner"], u_make_file, self.cpath("i/f"), None, b"data\n", False)
        as_user(self.users["owner"], u_make_file, self.cpath("i/x"), None, b"data\n", True)
        as_user(self.users["owner"], u_mkdir, self.cpath("i/sub"), 0o777, False)
        umask = 0 if self.a.vers == "4.2" else 0o022
        f = self.inherited(0o666 & ~umask)
        x = self.inherited(0o666 & ~umask, chmod=self.a.vers == "4.0")
        self.see("i/f", "v4inherit inherited", f)
        self.see("i/x", "v4inherit inherited (O_EXCL)", x)
        self.see("i/sub", "v4inherit inherited", self.inherited(0o777 & ~umask), dflt, is_dir=True)
        w = "EACCES" if umask else None
        self.attempts("v4inherit", {
            "named": [("read", "i/f", None), ("write", "i/f", w), ("write", "i/x", w)],
            "member": [("read", "i/f", None), ("write", "i/f", "EACCES"), ("read", "i/x", None)],
            "other": [("list", "i", "EACCES"), ("read", "i/f", "EACCES"),
                      ("read", "i/x", None if self.a.vers == "4.0" else "EACCES")]})

    def cleanup(self, before):
        if os.path.lexists(self.top):
            shutil.rmtree(self.top)
        after = sorted(os.listdir(self.a.dir))
        if after != before:
            raise Failed(f"left behind: {sorted(set(after) - set(before))}")

    def same(self):
        ref = {}
        with open(self.a.reference) as f:
            for ln in f:
                k, _, v = ln.rstrip("\n").partition(" = ")
                ref[k] = v
        mine = dict(self.obs)
        diffs = [f"{k}: knfsd {ref[k]}, here {v}" for k, v in mine.items() if k in ref and ref[k] != v]
        only = [k for k in mine if k not in ref] + [k for k in ref if k not in mine]
        for d in diffs:
            print(f"  differs from knfsd: {d}", flush=True)
        for k in only:
            print(f"  observed by one server only: {k}", flush=True)
        if diffs or only:
            raise Failed(f"{len(diffs)} observations differ from knfsd's, {len(only)} made by one "
                         f"server only; first: {(diffs + only)[0]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="the mount (its root: the export)")
    ap.add_argument("--server-dir", required=True, help="the exported directory, as the server sees it")
    ap.add_argument("--vers", required=True, help="NFS version of the mount: 3, 4.0, 4.1, 4.2")
    ap.add_argument("--tag", required=True, help="names this run's directory (e.g. 3-tcp)")
    ap.add_argument("--owner", type=parse_user, required=True, help="NAME:UID:GID")
    ap.add_argument("--named", type=parse_user, required=True, help="NAME:UID:GID")
    ap.add_argument("--member", type=parse_user, required=True, help="NAME:UID:GID:GROUPID")
    ap.add_argument("--other", type=parse_user, required=True, help="NAME:UID:GID")
    ap.add_argument("--group", type=parse_group, required=True, help="NAME:GID (member's group)")
    ap.add_argument("--transcript", help="write every observation here")
    ap.add_argument("--reference", help="knfsd's transcript of the same combination")
    a = ap.parse_args()
    r = Run(a)
    before = sorted(os.listdir(a.dir))
    if a.vers == "3":
        steps = [("check", r.check), ("v3file", r.v3file), ("v3dir", r.v3dir), ("v3default", r.v3default)]
    else:
        steps = [("check", r.check), ("v4file", r.v4file), ("v4mask", r.v4mask), ("v4dir", r.v4dir),
                 ("v4inherit", r.v4inherit)]
    steps.append(("cleanup", lambda: r.cleanup(before)))
    if a.reference and os.path.exists(a.reference):
        steps.append(("same", r.same))
    failed = 0
    checked = True
    for n, fn in steps:
        t0 = time.time()
        r.problems = []
        if not checked and n not in ("cleanup", "same"):
            st, why = "FAIL", "not run: check failed"
        else:
            try:
                fn()
                st, why = ("FAIL", "; ".join(r.problems[:3]) + (f" (+{len(r.problems) - 3} more)"
                                                                 if len(r.problems) > 3 else "")) \
                    if r.problems else ("PASS", "-")
            except Failed as e:
                st, why = "FAIL", str(e)
            except OSError as e:
                st, why = "FAIL", f"{e.strerror} ({ename(e.errno)}) at {e.filename}"
            except Exception as e:  # noqa: BLE001 - a step that crashed fails with its cause
                st, why = "FAIL", f"{type(e).__name__}: {e}"
        for p in r.problems[3:]:
            print(f"  also: {p}", flush=True)
        if st == "FAIL":
            failed += 1
            if n == "check":
                checked = False
        print(f"sub={n} status={st} time={time.time() - t0:.2f} reason={why}", flush=True)
        if n == "cleanup" and a.transcript:
            with open(a.transcript, "w") as f:
                for k, v in r.obs:
                    f.write(f"{k} = {v}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
