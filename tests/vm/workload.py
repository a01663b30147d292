#!/usr/bin/env python3
"""File-system workload run by the interop harness on one NFS mount (inside the QEMU guest).

Each case runs in its own directory under --dir and prints one line
    RESULT <label> case=NAME status=PASS|FAIL|SKIP time=SECONDS reason=TEXT
on stdout. Details (and the reason of a failure) go to --log. A case that cannot run is SKIP,
never PASS. The workload is deterministic for a given --seed.

Usable on any mounted directory, e.g. by hand:
    python3 tests/vm/workload.py --dir /mnt/nfs/work --label "server=x vers=3 transport=tcp"
"""

import argparse
import errno
import hashlib
import mmap
import json
import os
import random
import re
import shutil
import statistics
import stat
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

MiB = 1 << 20
LOG = None


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def log(msg):
    if LOG:
        LOG.write(msg + "\n")
        LOG.flush()


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def drop_caches():
    """Writes back and forgets the client's cached pages and inodes, so reads go to the server."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:  # not root or not Linux: reads may then come from the page cache
        log(f"drop_caches: {e}")


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        check(n > 0, "write returned 0")
        view = view[n:]


def pwrite_all(fd, data, off):
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, off)
        check(n > 0, "pwrite returned 0")
        view = view[n:]
        off += n


def pread_all(fd, n, off):
    out = bytearray()
    while len(out) < n:
        b = os.pread(fd, n - len(out), off + len(out))
        if not b:
            break
        out += b
    return bytes(out)


def read_file(path, flags=0, chunk=MiB):
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        out = bytearray()
        while True:
            b = os.read(fd, chunk)
            if not b:
                return bytes(out)
            out += b
    finally:
        os.close(fd)


def read_direct(path, chunk=MiB):
    """Whole file through O_DIRECT (page-aligned buffer and offsets, so local file systems accept
    it too): the data comes from the server, not from the client's page cache."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, chunk)
    try:
        out = bytearray()
        while True:
            n = os.preadv(fd, [buf], len(out))
            out += buf[:n]
            if n < chunk:
                return bytes(out)
    finally:
        buf.close()
        os.close(fd)


def write_file(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def first_diff(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def expect_errno(fn, codes, what):
    try:
        fn()
    except OSError as e:
        check(e.errno in codes, f"{what}: got {errno.errorcode.get(e.errno, e.errno)}, "
                                f"want {'/'.join(errno.errorcode[c] for c in codes)}")
        return
    raise Fail(f"{what}: succeeded, want {'/'.join(errno.errorcode[c] for c in codes)}")


# ---------------------------------------------------------------------------------------------
# cases: each gets its own empty directory d and the parsed arguments


def case_smoke(d, a):
    """statfs, mkdir/rmdir, a small file written and read back."""
    st = os.statvfs(d)
    log(f"statvfs: bsize={st.f_bsize} blocks={st.f_blocks} bfree={st.f_bfree} files={st.f_files}")
    check(st.f_blocks > 0, "statvfs reports 0 blocks")
    os.mkdir(os.path.join(d, "sub"))
    p = os.path.join(d, "sub", "hello")
    write_file(p, b"hello, nfs\n")
    check(read_file(p) == b"hello, nfs\n", "small file reads back wrong")
    expect_errno(lambda: os.mkdir(os.path.join(d, "sub")), {errno.EEXIST}, "mkdir of existing dir")
    expect_errno(lambda: os.rmdir(os.path.join(d, "sub")), {errno.ENOTEMPTY, errno.EEXIST},
                 "rmdir of non-empty dir")
    expect_errno(lambda: os.stat(os.path.join(d, "nope")), {errno.ENOENT}, "stat of missing name")
    os.unlink(p)
    os.rmdir(os.path.join(d, "sub"))
    check(os.listdir(d) == [], "directory not empty after cleanup")


def case_bigfile(d, a):
    """64 MiB written sequentially, checksummed, read back after dropping caches (buffered and
    O_DIRECT, with odd read sizes) and compared."""
    size = a.big_mib * MiB
    rnd = random.Random(a.seed)
    base = rnd.randbytes(MiB)
    p = os.path.join(d, "big")
    h = hashlib.sha256()
    t0 = time.monotonic()
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(size // MiB):
            blk = struct.pack("<QQ", i, a.seed) + base[16:]  # every block distinct
            h.update(blk)
            write_all(fd, blk)
        os.fsync(fd)
    finally:
        os.close(fd)
    tw = time.monotonic() - t0
    want = h.hexdigest()
    check(os.stat(p).st_size == size, f"size {os.stat(p).st_size} after writing {size}")
    drop_caches()
    t0 = time.monotonic()
    h2 = hashlib.sha256()
    fd = os.open(p, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, 777_777)  # odd size: reads straddle the writer's block boundaries
            if not b:
                break
            h2.update(b)
    finally:
        os.close(fd)
    tr = time.monotonic() - t0
    check(h2.hexdigest() == want, f"buffered read-back sha256 {h2.hexdigest()} != written {want}")
    t0 = time.monotonic()
    h3 = hashlib.sha256(read_direct(p))
    td = time.monotonic() - t0
    check(h3.hexdigest() == want, f"O_DIRECT read-back sha256 {h3.hexdigest()} != written {want}")
    log(f"write {size / MiB / tw:.1f} MiB/s, read {size / MiB / tr:.1f} MiB/s, "
        f"direct read {size / MiB / td:.1f} MiB/s, sha256 {want}")
    os.unlink(p)


def case_files1000(d, a):
    """1,000 files created exclusively, listed, spot-checked after dropping caches, removed."""
    n = a.nfiles
    sub = os.path.join(d, "many")
    os.mkdir(sub)
    for i in range(n):
        fd = os.open(os.path.join(sub, f"f{i:05d}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        write_all(fd, f"file {i}\n".encode() * (i % 5))
        os.close(fd)
    names = os.listdir(sub)
    check(len(names) == n, f"listdir returned {len(names)} names, want {n}")
    check(set(names) == {f"f{i:05d}" for i in range(n)}, "listdir names differ from created")
    expect_errno(lambda: os.open(os.path.join(sub, "f00007"), os.O_CREAT | os.O_EXCL | os.O_WRONLY),
                 {errno.EEXIST}, "O_EXCL create of existing file")
    drop_caches()
    rnd = random.Random(a.seed)
    for i in rnd.sample(range(n), min(50, n)):
        got = read_file(os.path.join(sub, f"f{i:05d}"))
        check(got == f"file {i}\n".encode() * (i % 5), f"f{i:05d} content wrong: {got[:40]!r}")
    for i in range(n):
        os.unlink(os.path.join(sub, f"f{i:05d}"))
    left = os.listdir(sub)
    check(left == [], f"{len(left)} names left after removing all")
    os.rmdir(sub)


def case_rename(d, a):
    """Renames within and across directories, over an existing file, of a directory, and the
    error cases; contents and file ids survive."""
    A, B = os.path.join(d, "a"), os.path.join(d, "b")
    os.mkdir(A)
    os.mkdir(B)
    write_file(os.path.join(A, "x"), b"x-content")
    ino = os.stat(os.path.join(A, "x")).st_ino
    os.rename(os.path.join(A, "x"), os.path.join(A, "y"))
    check(not os.path.exists(os.path.join(A, "x")), "old name still exists after rename")
    check(os.stat(os.path.join(A, "y")).st_ino == ino, "file id changed by rename")
    os.rename(os.path.join(A, "y"), os.path.join(B, "y"))
    write_file(os.path.join(B, "z"), b"z-content-to-be-replaced")
    os.rename(os.path.join(B, "y"), os.path.join(B, "z"))
    check(sorted(os.listdir(B)) == ["z"], f"b/ holds {sorted(os.listdir(B))} after rename-over")
    drop_caches()
    check(read_file(os.path.join(B, "z")) == b"x-content", "rename over existing: wrong content")
    check(os.stat(os.path.join(B, "z")).st_ino == ino, "file id changed by rename over")
    for i in range(20):
        write_file(os.path.join(A, f"k{i}"), str(i).encode())
    C = os.path.join(d, "c")
    os.rename(A, C)
    check(not os.path.exists(A), "old directory name still exists")
    check(len(os.listdir(C)) == 20, "renamed directory lost entries")
    check(read_file(os.path.join(C, "k7")) == b"7", "file in renamed directory: wrong content")
    os.mkdir(os.path.join(d, "empty"))
    os.rename(os.path.join(d, "empty"), os.path.join(d, "empty2"))
    os.mkdir(os.path.join(d, "target"))
    os.rename(os.path.join(d, "empty2"), os.path.join(d, "target"))  # onto an empty directory
    check(os.path.isdir(os.path.join(d, "target")), "rename onto empty directory failed")
    expect_errno(lambda: os.rename(os.path.join(d, "missing"), os.path.join(d, "m2")),
                 {errno.ENOENT}, "rename of missing name")
    expect_errno(lambda: os.rename(os.path.join(d, "target"), C),
                 {errno.ENOTEMPTY, errno.EEXIST}, "rename of directory onto non-empty directory")
    expect_errno(lambda: os.rename(os.path.join(B, "z"), C), {errno.EISDIR},
                 "rename of file onto directory")
    expect_errno(lambda: os.rename(C, os.path.join(C, "inside")), {errno.EINVAL},
                 "rename of directory into itself")
    # same-name rename is a no-op
    os.rename(os.path.join(B, "z"), os.path.join(B, "z"))
    check(read_file(os.path.join(B, "z")) == b"x-content", "rename to itself changed the file")
    shutil.rmtree(C)
    shutil.rmtree(B)
    os.rmdir(os.path.join(d, "target"))


def case_lsdir(d, a):
    """`ls -l` of a directory of 2,000 long names (several READDIR(PLUS) round trips)."""
    n = a.ndir
    sub = os.path.join(d, "big-dir")
    os.mkdir(sub)
    names = [f"entry-{i:05d}-" + "abcdefghijklmnopqrstuvwxyz"[: 10 + i % 17] for i in range(n)]
    for i, nm in enumerate(names):
        fd = os.open(os.path.join(sub, nm), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
        if i % 10 == 0:
            write_all(fd, b"z" * i)
        os.close(fd)
    drop_caches()
    r = subprocess.run(["ls", "-l", "--color=never", "--time-style=+%s", sub],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"ls -l exited {r.returncode}: {r.stderr.strip()[:200]}")
    lines = r.stdout.splitlines()
    check(lines and lines[0].startswith("total "), f"ls -l first line {lines[:1]!r}")
    rows = lines[1:]
    check(len(rows) == n, f"ls -l listed {len(rows)} entries, want {n}")
    seen = {}
    for row in rows:
        f = row.split()
        check(len(f) == 7, f"ls -l row not understood: {row!r}")
        seen[f[6]] = (f[0], int(f[4]))
    for i, nm in enumerate(names):
        check(nm in seen, f"{nm} missing from ls -l")
        mode, size = seen[nm]
        check(mode.startswith("-rw-r-----"), f"{nm}: mode {mode}, want -rw-r-----")
        want = i if i % 10 == 0 else 0
        check(size == want, f"{nm}: size {size}, want {want}")
    # a second, independent listing with telldir-style restarts through os.scandir
    with os.scandir(sub) as it:
        got = sorted(e.name for e in it)
    check(got == sorted(names), "scandir listing differs from created names")
    shutil.rmtree(sub)


def case_symlink(d, a):
    """Symlinks: readlink, lstat, following, dangling, long targets, to a directory."""
    tgt = os.path.join(d, "target")
    write_file(tgt, b"through the link")
    ln = os.path.join(d, "link")
    os.symlink("target", ln)
    check(os.readlink(ln) == "target", f"readlink {os.readlink(ln)!r}")
    check(stat.S_ISLNK(os.lstat(ln).st_mode), "lstat of symlink is not a link")
    check(os.lstat(ln).st_size == len("target"), f"symlink size {os.lstat(ln).st_size}")
    check(read_file(ln) == b"through the link", "reading through symlink: wrong content")
    long_target = "/".join(["d" * 200] * 4)  # 803 bytes
    os.symlink(long_target, os.path.join(d, "long"))
    drop_caches()
    check(os.readlink(os.path.join(d, "long")) == long_target, "long symlink target mangled")
    os.symlink("does-not-exist", os.path.join(d, "dangling"))
    check(os.path.islink(os.path.join(d, "dangling")), "dangling symlink missing")
    expect_errno(lambda: os.stat(os.path.join(d, "dangling")), {errno.ENOENT},
                 "stat through dangling symlink")
    os.mkdir(os.path.join(d, "dir"))
    write_file(os.path.join(d, "dir", "inner"), b"inner")
    os.symlink("dir", os.path.join(d, "dirlink"))
    check(os.listdir(os.path.join(d, "dirlink")) == ["inner"], "listing through dir symlink")
    expect_errno(lambda: os.symlink("x", ln), {errno.EEXIST}, "symlink over existing name")
    os.unlink(ln)
    check(os.path.exists(tgt), "unlinking the symlink removed its target")
    shutil.rmtree(os.path.join(d, "dir"))
    for nm in ("long", "dangling", "dirlink", "target"):
        os.unlink(os.path.join(d, nm))


def case_hardlink(d, a):
    """Hard links: link counts, shared content and id, unlink of one name, cross-directory."""
    p = os.path.join(d, "orig")
    write_file(p, b"A" * 5000)
    q = os.path.join(d, "alias")
    os.link(p, q)
    sp, sq = os.stat(p), os.stat(q)
    check(sp.st_ino == sq.st_ino, "hard link has a different file id")
    check(sp.st_nlink == 2 and sq.st_nlink == 2, f"nlink {sp.st_nlink}/{sq.st_nlink}, want 2")
    fd = os.open(q, os.O_WRONLY)
    os.pwrite(fd, b"BBBB", 100)
    os.close(fd)
    drop_caches()
    got = read_file(p)
    check(got[100:104] == b"BBBB" and len(got) == 5000, "write through one link not seen via other")
    os.mkdir(os.path.join(d, "other"))
    r = os.path.join(d, "other", "third")
    os.link(q, r)
    check(os.stat(p).st_nlink == 3, f"nlink {os.stat(p).st_nlink} after third link, want 3")
    os.unlink(p)
    check(os.stat(q).st_nlink == 2, f"nlink {os.stat(q).st_nlink} after unlink, want 2")
    check(read_file(r)[100:104] == b"BBBB", "content lost after unlinking a name")
    expect_errno(lambda: os.link(os.path.join(d, "other"), os.path.join(d, "dirlink")),
                 {errno.EPERM, errno.EISDIR}, "hard link to a directory")
    expect_errno(lambda: os.link(q, r), {errno.EEXIST}, "link over existing name")
    os.unlink(q)
    os.unlink(r)
    os.rmdir(os.path.join(d, "other"))


def case_attrs(d, a):
    """chmod (incl. setuid/sticky), chown as root (as another user: refused, chgrp to their own
    group allowed), truncate up/down, utimes; each seen in stat after dropping caches."""
    p = os.path.join(d, "f")
    write_file(p, bytes(range(256)) * 40)  # 10240 bytes
    for mode in (0o640, 0o600, 0o4755, 0o2750, 0o777, 0o444):
        os.chmod(p, mode)
        check(stat.S_IMODE(os.stat(p).st_mode) == mode,
              f"chmod {mode:o}: mode {stat.S_IMODE(os.stat(p).st_mode):o}")
    os.chmod(p, 0o644)
    sd = os.path.join(d, "sticky")
    os.mkdir(sd)
    os.chmod(sd, 0o1777)
    check(stat.S_IMODE(os.stat(sd).st_mode) == 0o1777, "sticky directory mode")
    if os.geteuid() == 0:
        os.chown(p, 1234, 5678)
        drop_caches()
        st = os.stat(p)
        check((st.st_uid, st.st_gid) == (1234, 5678), f"chown: {st.st_uid}:{st.st_gid}, want 1234:5678")
        os.chown(p, -1, 42)
        st = os.stat(p)
        check((st.st_uid, st.st_gid) == (1234, 42), f"chgrp: {st.st_uid}:{st.st_gid}, want 1234:42")
        os.chown(p, 0, 0)
    else:
        # a user (the krb5 case runs the workload as one) may not give a file away: the server
        # checks as the caller; chgrp to the user's own group is allowed
        # refused by the server (EPERM), or over NFSv4 with Kerberos already by the client,
        # whose idmapper has no name for uid 1234 (EINVAL)
        try:
            os.chown(p, 1234, 5678)
            given = "allowed"
        except OSError as e:
            given = None if e.errno in (errno.EPERM, errno.EINVAL) else errno.errorcode.get(e.errno)
        check(given is None, f"a user giving a file away (chown to 1234:5678): {given}")
        os.chown(p, -1, os.getegid())
        drop_caches()
        st = os.stat(p)
        check((st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()),
              f"chown refused, then chgrp: {st.st_uid}:{st.st_gid}, want {os.geteuid()}:{os.getegid()}")
    os.truncate(p, 10 * MiB)
    drop_caches()
    check(os.stat(p).st_size == 10 * MiB, f"truncate up: size {os.stat(p).st_size}")
    fd = os.open(p, os.O_RDONLY)
    tail = pread_all(fd, 4096, 10 * MiB - 4096)
    head = pread_all(fd, 256, 0)
    os.close(fd)
    check(tail == bytes(4096), "extended region does not read as zeros")
    check(head == bytes(range(256)), "data before the old EOF changed by truncate up")
    os.truncate(p, 100)
    drop_caches()
    check(os.stat(p).st_size == 100, f"truncate down: size {os.stat(p).st_size}")
    check(read_file(p) == bytes(range(100)), "truncate down: wrong remaining content")
    fd = os.open(p, os.O_RDWR)
    os.ftruncate(fd, 0)
    write_all(fd, b"after ftruncate")
    os.close(fd)
    check(read_file(p) == b"after ftruncate", "ftruncate + write: wrong content")
    atime_ns, mtime_ns = 1_000_000_000 * 1_234_567_890 + 123_456_789, 1_000_000_000 * 987_654_321
    os.utime(p, ns=(atime_ns, mtime_ns))
    drop_caches()
    st = os.stat(p)
    check(st.st_mtime_ns == mtime_ns, f"utime: mtime {st.st_mtime_ns}, want {mtime_ns}")
    check(st.st_atime_ns == atime_ns, f"utime: atime {st.st_atime_ns}, want {atime_ns}")
    before = os.stat(p).st_mtime_ns
    time.sleep(0.05)
    with open(p, "ab") as f:
        f.write(b"!")
    check(os.stat(p).st_mtime_ns != before, "write did not change mtime")
    os.unlink(p)
    os.rmdir(sd)


def case_posix(d, a):
    """Differential POSIX test (tests/vm/posixdiff.py): the same sequence of system calls
    (create, open with each access mode, write, truncate, chmod/chown/utimensat, link, rename,
    unlink, mkdir/rmdir, symlink, mkfifo, set-id and sticky bits; POSIX ACLs: set, default ACLs
    inherited, access as named users, group members and others; as root and as users 1001 to
    1004) on a local directory under /tmp (tmpfs in the guest, with POSIX ACLs) and on the
    mount; per step every result or errno and, from a fresh statx, mode, owner, link count,
    size, each time's relation to the step and in the ACL steps the ACLs compared. Differences
    every NFS server shows with the Linux client (posixdiff.KNOWN) are logged with their reason
    and do not fail the case."""
    if os.geteuid() != 0:
        raise Skip("needs root: the steps run as uid 0 and 1001 to 1004")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import posixdiff
    local = tempfile.mkdtemp(prefix="posix-ref-", dir="/tmp")
    try:
        os.chmod(local, 0o777)
        log(f"posix: reference {local} ({fs_type(local)}), under test {d}")
        rep = posixdiff.run(local, d, log=lambda m: log(f"posix: {m}"), vers=a.vers or None,
                            domain=a.idmap_domain)
    finally:
        shutil.rmtree(local, ignore_errors=True)
    for reason in sorted({r for _, _, _, r in rep.expected}):
        log(f"posix: expected difference: {reason}")
    log(f"posix: {rep.summary()}")
    if rep.unexpected:
        first = " | ".join(posixdiff.format_diff(x)[:100] for x in rep.unexpected[:3])
        raise Fail(f"{rep.summary()}; first: {first}")


def fs_type(path):
    """The file system type of the mount `path` is on (its last line in /proc/mounts)."""
    mp, kind = mount_point_of(path), "?"
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1].replace("\\040", " ") == mp:
                kind = fields[2]
    return kind


def case_fsync(d, a):
    """fsync/fdatasync after writes, O_SYNC and O_DSYNC writes; data read back with O_DIRECT."""
    rnd = random.Random(a.seed + 1)
    p = os.path.join(d, "synced")
    chunks = [rnd.randbytes(rnd.randrange(1, 300_000)) for _ in range(12)]
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i, c in enumerate(chunks):
        write_all(fd, c)
        (os.fsync if i % 2 else os.fdatasync)(fd)
    os.close(fd)
    want = b"".join(chunks)
    got = read_direct(p)
    check(got == want, f"fsync'ed data reads back wrong at byte {first_diff(got, want)}")
    for flag, name in ((os.O_SYNC, "O_SYNC"), (os.O_DSYNC, "O_DSYNC")):
        q = os.path.join(d, name)
        fd = os.open(q, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flag, 0o644)
        for c in chunks[:6]:
            write_all(fd, c)
        os.close(fd)
        got = read_direct(q)
        want = b"".join(chunks[:6])
        check(got == want, f"{name} data reads back wrong at byte {first_diff(got, want)}")
        os.unlink(q)
    # fsync of a directory and of a read-only descriptor
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.unlink(p)


def case_fsx(d, a):
    """Seeded fsx-style run: random writes, reads, truncates, mmap reads/writes, fsyncs and
    close/drop-caches/reopen cycles on one file, checked against an in-memory model."""
    rnd = random.Random(a.seed + 2)
    maxlen = 1 << 20
    p = os.path.join(d, "fsx")
    model = bytearray()
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    hist = []

    def verify(where, off=0, n=None):
        n = len(model) - off if n is None else n
        got = pread_all(fd, n, off)
        want = bytes(model[off:off + n])
        if got != want:
            i = first_diff(got, want)
            for h in hist[-30:]:
                log("  op " + h)
            raise Fail(f"fsx op {len(hist)} ({where}): {n} bytes at {off}: first difference at "
                       f"file offset {off + i} (got {got[i:i + 8].hex()} want {want[i:i + 8].hex()}, "
                       f"read {len(got)} bytes)")

    try:
        for opno in range(a.fsx_ops):
            op = rnd.choices(["write", "read", "truncate", "mapread", "mapwrite", "fsync", "reopen",
                              "direct"], [30, 25, 8, 8, 8, 6, 3, 4])[0]
            if op == "write":
                off = rnd.randrange(0, maxlen)
                n = rnd.randrange(1, min(65536, maxlen - off) + 1)
                data = rnd.randbytes(n)
                pwrite_all(fd, data, off)
                if off > len(model):
                    model.extend(bytes(off - len(model)))
                model[off:off + n] = data
                hist.append(f"{opno} write {off} {n}")
            elif op == "read":
                if not model:
                    continue
                off = rnd.randrange(0, len(model))
                n = rnd.randrange(1, min(65536, len(model) - off) + 1)
                hist.append(f"{opno} read {off} {n}")
                verify("read", off, n)
                extra = pread_all(fd, 10, len(model))
                check(extra == b"", f"fsx op {opno}: {len(extra)} bytes read past EOF {len(model)}")
            elif op == "truncate":
                n = rnd.randrange(0, maxlen)
                os.ftruncate(fd, n)
                if n < len(model):
                    del model[n:]
                else:
                    model.extend(bytes(n - len(model)))
                hist.append(f"{opno} truncate {n}")
                st = os.fstat(fd)
                check(st.st_size == n, f"fsx op {opno}: size {st.st_size} after truncate to {n}")
            elif op in ("mapread", "mapwrite"):
                if not model:
                    continue
                off = rnd.randrange(0, len(model))
                n = rnd.randrange(1, min(65536, len(model) - off) + 1)
                pg = off & ~(mmap.PAGESIZE - 1)
                m = mmap.mmap(fd, off + n - pg, mmap.MAP_SHARED,
                              mmap.PROT_READ | (mmap.PROT_WRITE if op == "mapwrite" else 0),
                              offset=pg)
                try:
                    if op == "mapwrite":
                        data = rnd.randbytes(n)
                        m[off - pg:off - pg + n] = data
                        m.flush()
                        model[off:off + n] = data
                        hist.append(f"{opno} mapwrite {off} {n}")
                    else:
                        hist.append(f"{opno} mapread {off} {n}")
                        got = m[off - pg:off - pg + n]
                        if got != bytes(model[off:off + n]):
                            i = first_diff(got, model[off:off + n])
                            raise Fail(f"fsx op {opno} mapread {n} at {off}: first difference at "
                                       f"file offset {off + i}")
                finally:
                    m.close()
            elif op == "fsync":
                os.fsync(fd)
                hist.append(f"{opno} fsync")
            elif op == "reopen":
                os.close(fd)
                fd = -1
                drop_caches()
                fd = os.open(p, os.O_RDWR)
                hist.append(f"{opno} reopen (caches dropped), size {len(model)}")
                check(os.fstat(fd).st_size == len(model),
                      f"fsx op {opno}: size {os.fstat(fd).st_size} after reopen, want {len(model)}")
                verify("full verify after reopen")
            elif op == "direct":
                os.fsync(fd)
                got = read_direct(p)
                hist.append(f"{opno} direct read of {len(model)}")
                if got != bytes(model):
                    i = first_diff(got, model)
                    raise Fail(f"fsx op {opno} O_DIRECT read: got {len(got)} bytes, model "
                               f"{len(model)}, first difference at {i}")
        os.fsync(fd)
        verify("final")
    finally:
        if fd >= 0:
            os.close(fd)
    drop_caches()
    got = read_file(p)
    check(got == bytes(model), f"fsx final re-read after drop_caches differs at {first_diff(got, model)}")
    log(f"fsx: {a.fsx_ops} ops, final size {len(model)}")
    os.unlink(p)


def case_tar(d, a):
    """Extracts a tar of a source tree (modes, mtimes, nested directories), compares every member
    with `tar -d` after dropping caches (as a user other than root: all but the owners), and
    removes the tree."""
    if not a.tarball or not os.path.exists(a.tarball):
        raise Skip(f"no tarball ({a.tarball})")
    dst = os.path.join(d, "tree")
    os.mkdir(dst)
    r = subprocess.run(["tar", "-x", "-p", "-f", a.tarball, "-C", dst], capture_output=True,
                       text=True, timeout=900)
    check(r.returncode == 0, f"tar -x exited {r.returncode}: {r.stderr.strip()[:300]}")
    drop_caches()
    r = subprocess.run(["tar", "-d", "-f", a.tarball, "-C", dst], capture_output=True, text=True,
                       timeout=900)
    out = (r.stdout + r.stderr).strip()
    log("tar -d output:\n" + out[:4000])
    if os.geteuid() != 0:
        # a user extracts as themselves (the krb5 case): the members' owners cannot be kept
        out = "\n".join(x for x in out.splitlines()
                        if not x.endswith(("Uid differs", "Gid differs")))
        check(not out, f"tar -d: {out[:300]}")
    else:
        check(r.returncode == 0 and not out, f"tar -d exited {r.returncode}: {out[:300]}")
    r = subprocess.run(["tar", "-t", "-f", a.tarball], capture_output=True, text=True, timeout=300)
    members = [m.rstrip("/") for m in r.stdout.splitlines()]
    n = 0
    for root, dirs, files in os.walk(dst):
        n += len(dirs) + len(files)
    check(n == len(members), f"tree has {n} entries, tar lists {len(members)}")
    shutil.rmtree(dst)
    check(not os.path.exists(dst), "tree still exists after rm -r")


def metrics(a):
    """The server's Prometheus counters as {name or name{labels}: value}; None without a URL."""
    if not a.metrics_url:
        return None
    try:
        text = urllib.request.urlopen(a.metrics_url, timeout=30).read().decode()
    except OSError as e:
        raise Fail(f"cannot read server metrics at {a.metrics_url}: {e}")
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def metric_delta(m0, m1, name):
    check(name in m1, f"the server does not export {name}")
    return m1[name] - m0.get(name, 0)


def read_plus_used(a, m0, m1, what):
    """Whether the client read with READ_PLUS. The Linux client does not send READ_PLUS on
    RDMA mounts (seen in the guest: every byte came by READ), so there plain READ is expected;
    over TCP a v4.2 client that falls back to READ is a failure (the server would not be
    offering READ_PLUS)."""
    rp = (metric_delta(m0, m1, "rnfs_nfs4_read_plus_data_bytes_total")
          + metric_delta(m0, m1, "rnfs_nfs4_read_plus_hole_bytes_total"))
    read = metric_delta(m0, m1, "rnfs_nfs4_read_bytes_total")
    if rp == 0 and a.transport == "rdma":
        log(f"{what}: the client read by READ ({read:.0f} bytes), as it does over RDMA")
        check(read > 0, "neither READ nor READ_PLUS reached the server")
        return False
    check(rp > 0, f"{what}: the NFSv4.2 client did not use READ_PLUS (READ {read:.0f} bytes)")
    return True


def case_sparse(d, a):
    """Sparse files: alternating 64 KiB data and holes read back identical (and the server keeps
    the holes); a file that is all hole (1 GiB with NFSv4.2) reads back as zeros. With NFSv4.2
    and server metrics, READ_PLUS must send the hole as HOLE segments: under 1 MiB of payload."""
    K64 = 64 << 10
    # alternating data and holes, written through the mount
    size = a.alt_mib * MiB
    alt = os.path.join(d, "alternating")
    model = bytearray(size)
    fd = os.open(alt, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        for off in range(0, size, 2 * K64):
            chunk = bytes(((i * 7 + off // K64) & 0xFF) | 1 for i in range(256)) * (K64 // 256)
            pwrite_all(fd, chunk, off)
            model[off:off + K64] = chunk
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
    drop_caches()
    used = os.stat(alt).st_blocks * 512
    log(f"alternating: {size} bytes, {used} bytes allocated on the server")
    check(used <= size // 2 + MiB,
          f"the server allocated {used} bytes for {size // 2} bytes of data: holes were filled")
    m0 = metrics(a)
    got = read_file(alt)
    m1 = metrics(a)
    check(len(got) == size, f"read {len(got)} bytes of {size}")
    check(got == model, f"alternating data/holes differ at byte {first_diff(got, model)}")
    if m0 is not None and a.vers == "4.2" and read_plus_used(a, m0, m1, "alternating"):
        data = metric_delta(m0, m1, "rnfs_nfs4_read_plus_data_bytes_total")
        hole = metric_delta(m0, m1, "rnfs_nfs4_read_plus_hole_bytes_total")
        log(f"alternating: READ_PLUS data {data:.0f} bytes, holes {hole:.0f} bytes")
        check(hole >= size // 4, f"READ_PLUS described only {hole:.0f} bytes as holes")
        check(data <= size * 3 // 4, f"READ_PLUS sent {data:.0f} bytes of data for {size // 2}")
    os.unlink(alt)

    # all hole
    hole_mib = a.hole_mib if a.vers == "4.2" else min(a.hole_mib, 64)
    size = hole_mib * MiB
    path = os.path.join(d, "hole")
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
    drop_caches()
    m0 = metrics(a)
    zero = bytes(MiB)
    fd = os.open(path, os.O_RDONLY)
    n = 0
    try:
        while True:
            b = os.read(fd, MiB)
            if not b:
                break
            check(b == zero[:len(b)], f"non-zero byte in the hole near offset {n}")
            n += len(b)
    finally:
        os.close(fd)
    m1 = metrics(a)
    check(n == size, f"read {n} bytes of a {size}-byte hole")
    if m0 is not None and a.vers == "4.2" and read_plus_used(a, m0, m1, f"{hole_mib} MiB hole"):
        data = metric_delta(m0, m1, "rnfs_nfs4_read_plus_data_bytes_total")
        hole = metric_delta(m0, m1, "rnfs_nfs4_read_plus_hole_bytes_total")
        read = metric_delta(m0, m1, "rnfs_nfs4_read_bytes_total")
        log(f"{hole_mib} MiB hole: READ_PLUS data {data:.0f} bytes, holes {hole:.0f} bytes, "
            f"READ {read:.0f} bytes")
        check(data + read < MiB,
              f"{hole_mib} MiB of hole cost {data:.0f} bytes of READ_PLUS and {read:.0f} of READ")
        check(hole >= size, f"READ_PLUS described {hole:.0f} of {size} bytes as hole")
    os.unlink(path)


def case_reclaim(d, a):
    """NFSv4 state survives a server crash: a process holds a file open with a byte-range lock
    while the server is killed (SIGKILL for rnfsd) and restarted; afterwards I/O on the open file
    works, another process is still refused the lock, and the server counts the reclaims."""
    if a.vers == "3":
        raise Skip("NFSv3 locks are NLM's, reclaimed through NSM: the nlm case checks them")
    if not a.restart_cmd:
        raise Skip("the harness gave no --restart-cmd for this server")
    import fcntl
    path = os.path.join(d, "locked")
    t0 = time.monotonic()
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        pwrite_all(fd, b"before", 0)
        os.fsync(fd)
        log(f"open + write + fsync: {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 4096, 0)
        log(f"lock: {time.monotonic() - t0:.1f}s")
        t0 = time.monotonic()
        r = subprocess.run(a.restart_cmd, shell=True, capture_output=True, text=True, timeout=300)
        log(f"restart ({time.monotonic() - t0:.1f}s): rc={r.returncode} {r.stdout} {r.stderr}")
        check(r.returncode == 0, f"restarting the server failed: {one_line(r.stdout + r.stderr)}")
        # the first I/O after the restart makes the client notice it and reclaim
        t0 = time.monotonic()
        pwrite_all(fd, b"after", 4096)
        os.fsync(fd)
        log(f"write + fsync after the restart: {time.monotonic() - t0:.1f}s")
        if a.reclaimed_cmd:
            # the write needed the reclaimed state, so the client has reclaimed by now
            r = subprocess.run(a.reclaimed_cmd, shell=True, capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 0, f"{a.reclaimed_cmd} failed: {one_line(r.stdout + r.stderr)}")
        probe = ("import fcntl, os, sys\n"
                 "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                 "try:\n"
                 "    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 4096, 0)\n"
                 "    print('GRANTED')\n"
                 "except OSError as e:\n"
                 "    print('DENIED', e.errno)\n")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True,
                           timeout=600)
        log(f"conflicting lock from another process ({time.monotonic() - t0:.1f}s): "
            f"{r.stdout.strip()} {r.stderr.strip()}")
        check(r.stdout.startswith("DENIED"),
              f"another process got the lock after the restart ({one_line(r.stdout + r.stderr)}):"
              " the server lost it")
        m = metrics(a)
        if m is not None:
            opens = m.get('rnfs_nfs4_reclaims_total{kind="open"}', 0)
            locks = m.get('rnfs_nfs4_reclaims_total{kind="lock"}', 0)
            delegs = m.get('rnfs_nfs4_reclaims_total{kind="delegation"}', 0)
            log(f"reclaims admitted by the restarted server: {opens:.0f} opens, {locks:.0f} locks,"
                f" {delegs:.0f} delegations")
            # under a (write) delegation the client keeps its locks itself: with the delegation
            # reclaimed there is no lock for the server to reclaim
            check(opens >= 1 and (locks >= 1 or delegs >= 1),
                  f"the restarted server admitted {opens:.0f} open, {locks:.0f} lock and"
                  f" {delegs:.0f} delegation reclaims")
        fcntl.lockf(fd, fcntl.LOCK_UN, 4096, 0)
    finally:
        os.close(fd)
    drop_caches()
    got = read_file(path)
    check(got[:6] == b"before" and got[4096:4101] == b"after" and len(got) == 4101,
          f"file after the restart: {len(got)} bytes, {got[:6]!r} ... {got[4096:4101]!r}")
    os.unlink(path)


def case_crash(d, a):
    """Crash consistency with the kernel client: the server is killed (SIGKILL for rnfsd; knfsd's
    threads stopped and started) while the client writes a file with an fsync every 8 MiB. The
    writer must see no error (the client resends what the restarted server, with its new write
    verifier, may not have), and the file must read back identical."""
    if not a.restart_cmd:
        raise Skip("the harness gave no --restart-cmd for this server")
    import threading
    n = max(a.big_mib, 24)
    path = os.path.join(d, "crash")
    progress = [0]
    errors = []

    def chunk(i):
        return hashlib.sha256(b"crash %d" % i).digest() * (MiB // 32)

    def writer():
        try:
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            try:
                for i in range(n):
                    pwrite_all(fd, chunk(i), i * MiB)
                    progress[0] = i + 1
                    if i % 8 == 7:
                        os.fsync(fd)
                os.fsync(fd)
            finally:
                os.close(fd)
        except Exception as e:  # reported below: the client must hide the crash
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    t0 = time.monotonic()
    while progress[0] < n // 3 and t.is_alive() and time.monotonic() - t0 < 300:
        time.sleep(0.01)
    at = progress[0]
    r = subprocess.run(a.restart_cmd, shell=True, capture_output=True, text=True, timeout=300)
    log(f"crash after {at} of {n} MiB written: rc={r.returncode} {r.stdout} {r.stderr}")
    check(r.returncode == 0, f"restarting the server failed: {one_line(r.stdout + r.stderr)}")
    t.join(timeout=900)
    check(not t.is_alive(), "the writer hung after the server restarted")
    check(not errors, f"the writer failed across the crash: {errors[0] if errors else ''}")
    check(at < n, "the writer finished before the crash: nothing was tested")
    drop_caches()
    want = hashlib.sha256()
    for i in range(n):
        want.update(chunk(i))
    got = hashlib.sha256(read_file(path)).hexdigest()
    check(got == want.hexdigest(), "the file differs from what was written across the crash")
    check(os.stat(path).st_size == n * MiB, f"size {os.stat(path).st_size} != {n * MiB}")
    os.unlink(path)


def case_rdmapath(d, a):
    """The RPC-over-RDMA data path, from rnfsd's metrics: writing a file pulls WRITE data with
    RDMA Reads into the registered buffer the call is rebuilt in (only the inline header bytes
    are copied); reading it back places READ data with RDMA Writes straight from the registered
    buffer it was read into (no staging copy); no memory is registered while doing I/O; replies
    to one-R_key calls use Send With Invalidate; and every bulk buffer is back in the pool
    afterwards (nothing the server keeps pins one)."""
    if a.transport != "rdma":
        raise Skip("RDMA only")
    if not a.metrics_url:
        raise Skip("no server metrics to check the data path with")
    nmib = max(2, min(a.big_mib, 32))
    size = nmib * MiB
    path = os.path.join(d, "rdma")
    data = b"".join(hashlib.sha256(b"rdma %d" % i).digest() * (MiB // 32) for i in range(nmib))
    m0 = metrics(a)
    write_file(path, data)
    drop_caches()  # syncs first
    m1 = metrics(a)
    pulled = metric_delta(m0, m1, "rnfs_rdma_read_bytes_total")
    copied = metric_delta(m0, m1, "rnfs_rdma_call_copied_bytes_total")
    calls = metric_delta(m0, m1, "rnfs_rdma_calls_read_chunk_total")
    log(f"rdma write of {size} bytes: RDMA Read {pulled:.0f} bytes in {calls:.0f} calls with "
        f"Read chunks, {copied:.0f} inline bytes copied")
    check(pulled >= size * 0.9, f"only {pulled:.0f} bytes came by RDMA Read")
    check(copied < size // 64, f"{copied:.0f} bytes copied rebuilding {calls:.0f} WRITE calls")
    m0 = metrics(a)
    got = read_file(path)
    m1 = metrics(a)
    check(got == data, f"read back differs at byte {first_diff(got, data)}")
    written = metric_delta(m0, m1, "rnfs_rdma_write_bytes_total")
    staged = metric_delta(m0, m1, "rnfs_rdma_staged_bytes_total")
    regs = metric_delta(m0, m1, "rnfs_rdma_registrations")
    log(f"rdma read of {size} bytes: RDMA Write {written:.0f} bytes, staged (copied) "
        f"{staged:.0f}, new registrations {regs:.0f}")
    # a short last READ may come back inline instead
    check(written >= size * 0.9, f"only {written:.0f} bytes went out by RDMA Write")
    check(staged < size // 16, f"{staged:.0f} of {written:.0f} RDMA Write bytes were copied first")
    check(regs == 0, f"{regs:.0f} memory registrations during I/O")
    # Small direct reads have one-segment Write chunks (one R_key): their replies invalidate
    # it remotely. (Large reads may span several memory regions, several R_keys: no SWI then,
    # as with knfsd.)
    n = 64
    m0 = metrics(a)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, 8192)
        for i in range(n):
            k = os.preadv(fd, [buf], i * 65536)
            check(k == 8192 and buf[:] == data[i * 65536:i * 65536 + 8192],
                  f"O_DIRECT read at {i * 65536} differs")
    finally:
        os.close(fd)
    m1 = metrics(a)
    inval = metric_delta(m0, m1, "rnfs_rdma_send_with_invalidate_total")
    chunked = metric_delta(m0, m1, "rnfs_rdma_replies_write_chunk_total")
    log(f"{n} O_DIRECT reads of 8 KiB: {chunked:.0f} replies with a Write chunk, "
        f"{inval:.0f} Send With Invalidate")
    check(chunked >= n // 2, f"only {chunked:.0f} of {n} 8 KiB READ replies used a Write chunk")
    check(inval >= chunked * 0.9, f"{inval:.0f} of {chunked:.0f} one-chunk replies used SWI")
    os.unlink(path)
    # Nothing in flight now: every bulk buffer must be back in the pool.
    m = metrics(a)
    held = sum(v for k, v in m.items()
               if k.startswith("rnfs_rdma_pool_buffers_in_use{") and 'class="bulk"' in k)
    log(f"bulk buffers in use after the case: {held:.0f}")
    check(held == 0, f"{held:.0f} bulk buffers still held with no I/O in flight")


def case_deleg(d, a):
    """A read delegation recalled over the back channel (over RDMA: RFC 8167), or with NFSv4.0
    on the connection the server makes to the client's callback service: the NFSv4 mount opens
    a file for reading (the server delegates it), then an NFSv3 mount of the same export
    writes the file. The server must recall the delegation and let the write through once it
    is returned, well within a lease (a server that cannot recall would revoke the delegation
    only after the lease, 15 s in the guest). For rnfsd the metrics must show the delegation
    and, over RDMA, the backward call and its reply."""
    if a.vers not in ("4.0", "4.1", "4.2"):
        raise Skip("delegations are NFSv4's")
    if a.vers == "4.0" and a.transport == "rdma":
        raise Skip("an NFSv4.0 client over RDMA names an rdma callback netid, which neither "
                   "knfsd nor rnfsd calls (NFSv4.0 callbacks are TCP only): no delegations")
    if not a.mount_source:
        raise Skip("needs --mount-source for the NFSv3 mount")
    root = d
    while not os.path.ismount(root):
        root = os.path.dirname(root)
    rel = os.path.relpath(d, root)
    addr = a.mount_source.partition(":")[0]
    server = a.label.split()[0].partition("=")[2]
    path = os.path.join(d, "f")
    write_file(path, b"before\n")
    m0 = metrics(a)
    fd = os.open(path, os.O_RDONLY)  # the OPEN for reading the server may delegate
    mp = "/mnt/deleg3"
    os.makedirs(mp, exist_ok=True)
    try:
        check(os.read(fd, 100) == b"before\n", "read before the write differs")
        m1 = metrics(a)
        if m1 is not None:
            held = m1.get('rnfs_nfs4_state{kind="delegations"}', 0)
            log(f"delegations held after the open: {held:.0f}")
            check(held >= 1, "rnfsd granted no read delegation")
        r = subprocess.run(["mount", "-t", "nfs", "-o", "vers=3,proto=tcp",
                            f"{addr}:/srv/{server}", mp], capture_output=True, text=True,
                           timeout=120)
        check(r.returncode == 0, f"NFSv3 mount: {one_line(r.stderr)}")
        try:
            t0 = time.monotonic()
            other = os.path.join(mp, rel, "f")
            wfd = os.open(other, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(wfd, b"after\n")
                os.fsync(wfd)
            finally:
                os.close(wfd)
            dt = time.monotonic() - t0
        finally:
            subprocess.run(["umount", mp], capture_output=True, timeout=120)
        log(f"NFSv3 write of the delegated file took {dt:.1f} s")
        check(dt < 12, f"the NFSv3 write waited {dt:.1f} s: the delegation was not recalled")
    finally:
        os.close(fd)
    check(read_file(path) == b"after\n", "the NFSv4 mount does not see the NFSv3 write")
    m2 = metrics(a)
    if m2 is not None and a.transport == "rdma":
        calls = metric_delta(m0, m2, "rnfs_rdma_backward_calls_total")
        replies = metric_delta(m0, m2, "rnfs_rdma_backward_replies_total")
        log(f"over RDMA: {calls:.0f} backward calls, {replies:.0f} replies")
        check(calls >= 1 and replies >= 1, "no callback went over the RDMA connection")
    os.unlink(path)


def server_cpu_seconds(a):
    """CPU seconds the server has used: rnfsd's own counter, or the sum over knfsd's threads."""
    if a.metrics_url:
        return metrics(a).get("rnfs_process_cpu_seconds_total")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        if st[st.index("(") + 1:st.rindex(")")] == "nfsd":
            fields = st[st.rindex(")") + 2:].split()
            total += int(fields[11]) + int(fields[12])
    return total / 100.0


def perf_once(path, a, run_as=()):
    """One round of the perf case: {figure: value}. run_as prefixes each I/O command (the krb5
    case runs them as a user with a ticket: setpriv)."""
    mib = a.perf_mib
    run_as = list(run_as)
    cpu0 = server_cpu_seconds(a)
    t0 = time.monotonic()
    r = subprocess.run(run_as + ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}",
                        "conv=fsync"], capture_output=True, text=True, timeout=1800)
    check(r.returncode == 0, f"dd write: {one_line(r.stderr)}")
    wsec = time.monotonic() - t0
    cpu1 = server_cpu_seconds(a)
    drop_caches()
    t0 = time.monotonic()
    r = subprocess.run(run_as + ["dd", f"if={path}", "of=/dev/null", "bs=1M"], capture_output=True,
                       text=True, timeout=1800)
    check(r.returncode == 0, f"dd read: {one_line(r.stderr)}")
    rsec = time.monotonic() - t0
    cpu2 = server_cpu_seconds(a)
    mb = mib * MiB / 1e6
    fig = {"dd write MB/s": mb / wsec, "write server CPU ms/MB": (cpu1 - cpu0) / mb * 1000,
           "dd read MB/s": mb / rsec, "read server CPU ms/MB": (cpu2 - cpu1) / mb * 1000}
    if shutil.which("fio"):
        out = os.path.join(tempfile.gettempdir(), f"rnfs-fio-{os.getpid()}.json")
        r = subprocess.run(run_as + ["fio", "--name=randread", f"--filename={path}", "--rw=randread",
                            "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=32",
                            "--runtime=20", "--time_based", "--output-format=json",
                            f"--output={out}"], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"fio: {one_line(r.stderr)}")
        import json
        with open(out) as f:
            job = json.load(f)["jobs"][0]["read"]
        os.unlink(out)
        fig["fio randread 4k x32 IOPS"] = job["iops"]
        fig["fio randread mean us"] = job["clat_ns"]["mean"] / 1000
    r = subprocess.run(run_as + ["rm", "-f", path], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"rm: {one_line(r.stderr)}")
    return fig


def case_perf(d, a):
    """Not a test but figures (not in the default cases): dd write of --perf-mib MiB with
    fsync, dd read after dropping caches, fio 4 KiB random reads (O_DIRECT, 32 in flight, 20 s)
    when fio is installed, and the server's CPU seconds per MB moved; --perf-runs rounds, each
    figure as the median (min-max). Logged as a PERF line."""
    path = os.path.join(d, "perf")
    rounds = [perf_once(path, a) for _ in range(max(1, a.perf_runs))]
    figures = figures_text(rounds)
    if not shutil.which("fio"):
        figures += ", fio not installed: no random-read figure"
    log(f"PERF {a.label}: {figures}")
    print(f"PERF {a.label}: {figures}", flush=True)


def case_profile(d, a):
    """Not a test but a profile (not in the default cases): `perf record` of the whole guest
    (cpu-clock, about 1 kHz) while dd writes --perf-mib MiB with fsync, and again while dd reads
    it back after dropping caches; logs the report's top entries by command and symbol as
    PROFILE lines. Server, kernel client and dd are all in it, so rnfsd and knfsd are seen
    doing the same work side by side (docs/benchmarks.md). With fio installed, a third phase
    profiles 10 s of 4 KiB random reads of the file (O_DIRECT, 32 in flight), the small calls
    where a server's per-call cost shows. A last phase profiles metadata as files1000 and lsdir
    do it: 1,000 small files created one by one, listed with `ls -l` after dropping caches,
    removed."""
    perf = shutil.which("perf")
    if not perf:
        raise Skip("perf is not installed (Debian's linux-perf)")
    path = os.path.join(d, "profile")
    data = os.path.join(tempfile.gettempdir(), f"rnfs-profile-{os.getpid()}.data")
    phases = [("write", ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={a.perf_mib}",
                         "conv=fsync"]),
              ("read", ["dd", f"if={path}", "of=/dev/null", "bs=1M"])]
    if shutil.which("fio"):
        phases.append(("randread", ["fio", "--name=randread", f"--filename={path}",
                                    "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=libaio",
                                    "--iodepth=32", "--runtime=10", "--time_based"]))
    files = os.path.join(d, "profile-files")
    os.makedirs(files, exist_ok=True)
    phases.append(("files", files_phase(files)))
    try:
        for phase, cmd in phases:
            if phase == "read":
                drop_caches()
            t0 = time.monotonic()
            r = subprocess.run([perf, "record", "-a", "-e", "cpu-clock", "-F", "999", "-o", data,
                                "--"] + cmd, capture_output=True, text=True, timeout=1800)
            took = time.monotonic() - t0
            check(r.returncode == 0, f"perf record of {cmd[0]} {phase}: {one_line(r.stderr)}")
            log(f"PROFILE {a.label} {phase}: took {took:.1f} s")
            print(f"PROFILE {a.label} {phase}: took {took:.1f} s", flush=True)
            done = re.search(r"IOPS=([0-9.]+k?)", r.stdout) if cmd[0] == "fio" else None
            if done:
                log(f"PROFILE {a.label} {phase}: fio read IOPS={done.group(1)} while profiled")
                print(f"PROFILE {a.label} {phase}: fio read IOPS={done.group(1)} while profiled",
                      flush=True)
            top = []
            # the share of each command first (a server's whole cost, kernel threads included),
            # then the symbols of all, then those of the server's own threads (rnfsd, or knfsd's
            # nfsd threads) as shares of the server's samples, by library
            for sort, n, only in (("comm", 8, []), ("comm,symbol", 40, []),
                                  ("dso,symbol", 30, ["--comms", "rnfsd,nfsd",
                                                      "--percentage", "relative"])):
                r = subprocess.run([perf, "report", "-i", data, "--no-children", "--sort", sort,
                                    "--stdio", "-g", "none", "--percent-limit", "0.5"] + only,
                                   capture_output=True, text=True, timeout=600)
                check(r.returncode == 0, f"perf report: {one_line(r.stderr)}")
                top += [("server only: " if only else "") + " ".join(line.split())
                        for line in r.stdout.splitlines()
                        if line.strip() and not line.lstrip().startswith("#")][:n]
            for line in top:
                log(f"PROFILE {a.label} {phase}: {line}")
                print(f"PROFILE {a.label} {phase}: {line}", flush=True)
    finally:
        for f in (data, path):
            if os.path.exists(f):
                os.unlink(f)
        shutil.rmtree(files, ignore_errors=True)


def files_phase(path):
    """The metadata phase of `profile` and `costs`: 1,000 small files created one by one from a
    shell in `path`, listed with `ls -l` after dropping caches, removed."""
    return ["sh", "-c", "cd \"$1\" && i=0 && while [ $i -lt 1000 ]; do echo x > f$i || exit 1; "
            "i=$((i+1)); done && sync && echo 3 > /proc/sys/vm/drop_caches && ls -l > /dev/null "
            "&& rm -f f*", "sh", path]


def unit_costs():
    """This machine's price of what a user-space server pays per call and per byte and a kernel
    server does not: a system call (`perf bench syscall basic`), a wake-up of another process
    and back (`perf bench sched pipe`: two processes taking turns through pipes, 4 system calls
    and 2 wake-ups per round), and a byte copied from user memory into the page cache (pwrite)
    against a byte copied inside the kernel into the same pages (copy_file_range): both rewrite
    pages a first pass allocated, so only the copy differs. {figure: value}."""
    out = {}
    for key, args in (("syscall_us", ["syscall", "basic", "-l", "20000"]),
                      ("pipe_round_us", ["sched", "pipe", "-l", "2000"])):
        r = subprocess.run(["perf", "bench"] + args, capture_output=True, text=True, timeout=600)
        m = re.search(r"([0-9.]+) usecs/op", r.stdout)
        check(r.returncode == 0 and m, f"perf bench {' '.join(args)}: {one_line(r.stderr)}")
        out[key] = float(m.group(1))
    size, chunk = 64 * MiB, MiB
    scratch = tempfile.mkdtemp(dir="/dev/shm")
    try:
        src, dst = os.path.join(scratch, "src"), os.path.join(scratch, "dst")
        buf = bytes(random.Random(7).getrandbits(8) for _ in range(4096)) * (chunk // 4096)
        for path in (src, dst):
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
            for off in range(0, size, chunk):
                pwrite_all(fd, buf, off)
            os.close(fd)
        fs, fd = os.open(src, os.O_RDONLY), os.open(dst, os.O_WRONLY)
        try:
            t0 = time.monotonic()
            for off in range(0, size, chunk):
                pwrite_all(fd, buf, off)
            out["user_copy_mbs"] = size / 1e6 / (time.monotonic() - t0)
            t0 = time.monotonic()
            done = 0
            while done < size:
                n = os.copy_file_range(fs, fd, size - done, done, done)
                check(n > 0, "copy_file_range copied nothing")
                done += n
            out["kernel_copy_mbs"] = size / 1e6 / (time.monotonic() - t0)
        finally:
            os.close(fs)
            os.close(fd)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def server_events(data, a):
    """From a `perf record -a` of system-call entries and context switches: how many of each
    the server's threads made (rnfsd's process, or knfsd's `nfsd` threads)."""
    pid = None
    if os.path.exists("/run/rnfsd.pid") and a.metrics_url:
        with open("/run/rnfsd.pid") as f:
            pid = f.read().strip()
    r = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,event"],
                       capture_output=True, text=True, timeout=900)
    check(r.returncode == 0, f"perf script: {one_line(r.stderr)}")
    counts = {"raw_syscalls:sys_enter": 0, "sched:sched_switch": 0}
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        ours = f[-2] == pid if pid else f[0] == "nfsd"
        ev = f[-1].rstrip(":")
        if ours and ev in counts:
            counts[ev] += 1
    return counts["raw_syscalls:sys_enter"], counts["sched:sched_switch"]


def case_costs(d, a):
    """Not a test but figures (not in the default cases): where a metadata call's time goes
    under this machine's emulation. Measures the unit prices of [`unit_costs`] and the server's
    CPU per second while idle (10 s), then runs the `profile` case's files phase (1,000 small files created one by one from a shell, `ls -l`
    after dropping caches, removed) twice: once timed, with the server's CPU seconds and the
    client's calls (mountstats), once under `perf record -a` of system-call entries and context
    switches, counted for the server's threads. Logs a COSTS line: per call, the server's CPU
    µs, system calls and switches (docs/benchmarks.md, "In the guest")."""
    if not shutil.which("perf"):
        raise Skip("perf is not installed (Debian's linux-perf)")
    if not os.path.ismount("/sys/kernel/tracing"):
        subprocess.run(["mount", "-t", "tracefs", "tracefs", "/sys/kernel/tracing"],
                       capture_output=True, timeout=30)
    unit = unit_costs()
    # what the server spends doing nothing (timers, pollers), which a phase's CPU includes
    cpu0 = server_cpu_seconds(a)
    time.sleep(10)
    idle = (server_cpu_seconds(a) - cpu0) / 10
    files = os.path.join(d, "files")
    os.makedirs(files)
    cmd = files_phase(files)
    mnt = mount_point_of(d)
    calls0 = calls_made(mnt)
    cpu0 = server_cpu_seconds(a)
    # a mark on the console for a profiler of the emulator on the host
    print(f"COSTS {a.label}: files phase starts", flush=True)
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - t0
    check(r.returncode == 0, f"files phase: {one_line(r.stderr)}")
    cpu = server_cpu_seconds(a) - cpu0
    calls = calls_made(mnt) - calls0
    check(calls > 0, "the files phase made no NFS calls")
    data = os.path.join(tempfile.gettempdir(), f"rnfs-costs-{os.getpid()}.data")
    try:
        calls0 = calls_made(mnt)
        r = subprocess.run(["perf", "record", "-a", "-m", "4096", "-e", "raw_syscalls:sys_enter",
                            "-e", "sched:sched_switch", "-o", data, "--"] + cmd,
                           capture_output=True, text=True, timeout=1800)
        check(r.returncode == 0, f"perf record of the files phase: {one_line(r.stderr)}")
        lost = "lost" in r.stderr.lower()
        calls_traced = calls_made(mnt) - calls0
        syscalls, switches = server_events(data, a)
    finally:
        if os.path.exists(data):
            os.unlink(data)
    os.rmdir(files)
    text = (f"syscall {unit['syscall_us']:.2f} us, pipe round trip {unit['pipe_round_us']:.1f} us, "
            f"user copy {unit['user_copy_mbs']:.0f} MB/s, kernel copy "
            f"{unit['kernel_copy_mbs']:.0f} MB/s; server CPU idle {idle * 1000:.1f} ms/s; files phase {took:.1f} s, {calls} calls, "
            f"per call: {took / calls * 1e6:.0f} us, server CPU {cpu / calls * 1e6:.0f} us, "
            f"{syscalls / calls_traced:.1f} system calls, {switches / calls_traced:.2f} "
            f"switches{' (perf lost events)' if lost else ''}")
    log(f"COSTS {a.label}: {text}")
    print(f"COSTS {a.label}: {text}", flush=True)


def mount_port(addr):
    """The TCP port of MOUNT v3 at `addr`, from its rpcbind."""
    r = subprocess.run(["rpcinfo", "-p", addr], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"rpcinfo -p {addr}: {one_line(r.stderr)}")
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "100005" and f[1] == "3" and f[2] == "tcp":
            return int(f[3])
    raise Fail(f"no MOUNT v3 over TCP registered at {addr}")


def bench_binary():
    """The release build of rnfs-bench in this repository."""
    bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                         "target", "release", "rnfs-bench")
    check(os.access(bench, os.X_OK), f"{bench} missing: cargo build --release")
    return bench


def case_bench(d, a):
    """Not a test but figures (not in the default cases): rnfs-bench, the repository's load
    generator, against the mounted server with the mount's version and transport (over RDMA its
    own RPC-over-RDMA requester): random 4 KiB reads at 1 x 8 and 4 x 8 in flight, and a
    sequential write then read of --perf-mib MiB in 256 KiB records (knfsd's limit in the
    guest) at 4 in flight; --perf-runs rounds, each
    figure as the median (min-max). Logged as a BENCH line."""
    bench = bench_binary()
    proto = {"3": "v3", "4.1": "v4.1", "4.2": "v4.2"}.get(a.vers)
    if proto is None:
        raise Skip(f"rnfs-bench speaks NFSv3 and NFSv4.1+, not {a.vers}")
    check(bool(a.mount_source), "no --mount-source")
    addr, path = a.mount_source.rsplit(":", 1)
    rdma = a.transport == "rdma"
    common = ["--server", addr, "--port", "20049" if rdma else "2049", "--proto", proto,
              "--transport", "rdma" if rdma else "tcp", "--export", path, "--quiet"]
    if proto == "v3":
        common += ["--mount-port", str(mount_port(addr))]
    out = os.path.join(d, "bench.json")

    def run(args):
        r = subprocess.run([bench] + args + common + ["--json", out], capture_output=True,
                           text=True, timeout=900)
        check(r.returncode == 0, f"rnfs-bench {' '.join(args)}: {one_line(r.stderr or r.stdout)}")
        with open(out) as f:
            doc = json.load(f)
        os.unlink(out)
        return doc["results"]

    rounds = []
    for _ in range(max(1, a.perf_runs)):
        fig = {}
        rr = run(["randread", "--jobs", "1,4", "--iodepth", "8", "--runtime", "10",
                  "--file-size", "64m"])
        for row in rr["rows"]:
            fig[f"randread {row['jobs']}x{row['iodepth']} kIOPS"] = row["kiops"]
            fig[f"randread {row['jobs']}x{row['iodepth']} p99 us"] = row["p99_us"]
        # knfsd takes at most 256 KiB per READ/WRITE in the guest (its default scales with the
        # guest's 2 GiB of memory): both servers get the same size
        sq = run(["seq", "--file-size", f"{a.perf_mib}m", "--bs", "256k", "--iodepth", "4"])
        fig["seq write MB/s"] = sq["write_mb_s"]
        fig["seq rewrite MB/s"] = sq["rewrite_mb_s"]
        fig["seq read MB/s"] = sq["read_mb_s"]
        rounds.append(fig)
    figures = figures_text(rounds)
    log(f"BENCH {a.label}: {figures}")
    print(f"BENCH {a.label}: {figures}", flush=True)


def server_interface(a):
    """For a case that mounts the server again through more addresses of its interface, one
    connection each: (address, export, interface, address prefix) of the mount. NFSv3 only:
    the 4.1+ client trunks every address of one server onto one connection."""
    if a.vers != "3":
        raise Skip("NFSv4 clients share one connection among a server's addresses (trunking); "
                   "run it with --vers 3")
    addr, _, export = a.mount_source.partition(":")
    dev = subprocess.run(["ip", "-o", "addr", "show", "to", addr], capture_output=True,
                         text=True).stdout.split()
    check(len(dev) > 1, f"no interface has {addr}")
    return addr, export, dev[1], addr.rsplit(".", 1)[0]


def case_rdmaconns(d, a):
    """rnfsd's memory with 1, 8 and 32 RDMA connections (not in the default cases): each extra
    mount names the server by another address of the RDMA interface (the client shares one
    transport per server address, even with nosharecache), so each opens a connection; the
    resident size is read from the metrics after each step and must stay flat (the shared
    receive queue and the pool are sized at start, not per connection). Then rnfs-bench opens
    1, 8, 64 and 256 RDMA connections from one process (rdma_conns_by_bench)."""
    if a.transport != "rdma" or not a.metrics_url or not a.mount_source:
        raise Skip("needs an RDMA mount of rnfsd with metrics and --mount-source")
    addr, export, dev, prefix = server_interface(a)
    mounts = []
    rows = []
    try:
        for want in (1, 8, 32):
            while len(mounts) + 1 < want:
                alias = f"{prefix}.{100 + len(mounts)}"
                subprocess.run(["ip", "addr", "add", f"{alias}/24", "dev", dev],
                               capture_output=True)
                mp = f"/mnt/conn{len(mounts)}"
                os.makedirs(mp, exist_ok=True)
                r = subprocess.run(["mount", "-t", "nfs", "-o", a.mount_opts,
                                    f"{alias}:{export}", mp], capture_output=True, text=True,
                                   timeout=120)
                check(r.returncode == 0, f"mount {len(mounts) + 2}: {one_line(r.stderr)}")
                mounts.append(mp)
                os.statvfs(mp)
            time.sleep(1)
            m = metrics(a)
            conns = m.get("rnfs_rdma_connections", 0)
            rss = m.get("rnfs_process_resident_bytes", 0)
            recv = sum(v for k, v in m.items()
                       if k.startswith("rnfs_rdma_pool_bytes{") and 'class="recv"' in k)
            rows.append((want, conns, rss, recv))
            log(f"{want} mounts: rnfs_rdma_connections {conns:.0f}, resident {rss / MiB:.1f} MiB, "
                f"receive buffers {recv / MiB:.1f} MiB, "
                f"registrations {m.get('rnfs_rdma_registrations', 0):.0f}")
    finally:
        for mp in mounts:
            subprocess.run(["umount", mp], capture_output=True, timeout=120)
    check(rows[-1][1] >= 32, f"only {rows[-1][1]:.0f} RDMA connections with 32 mounts")
    grow = (rows[-1][2] - rows[0][2]) / MiB
    text = ", ".join(f"{w} conns {r / MiB:.1f} MiB (receive buffers {b / MiB:.1f} MiB)"
                     for w, _, r, b in rows)
    print(f"PERF {a.label}: rnfsd resident with {text}", flush=True)
    check(rows[0][3] > 0, "the server does not export rnfs_rdma_pool_bytes")
    check(len({b for _, _, _, b in rows}) == 1,
          f"receive-buffer memory changed with the connections: {text}")
    check(grow < 16, f"resident memory grew by {grow:.1f} MiB from 1 to 32 connections")
    rdma_conns_by_bench(a, addr, export)


def rdma_conns_by_bench(a, addr, export):
    """Then 1, 8, 64 and 256 RDMA connections from one process: rnfs-bench's own requester
    (`conns --transport rdma`), each connection one NULL call and then idle; rnfsd's resident
    size from /proc and its registered and receive-buffer memory from the metrics."""
    bench = bench_binary()
    with open("/run/rnfsd.pid") as f:
        pid = f.read().strip()
    out = "/tmp/bench-conns.json"
    r = subprocess.run([bench, "conns", "--transport", "rdma", "--server", addr, "--port", "20049",
                        "--mount-port", str(mount_port(addr)), "--export", export,
                        "--server-pid", pid, "--counts", "1,8,64,256", "--settle", "1",
                        "--quiet", "--json", out], capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"rnfs-bench conns over rdma: {one_line(r.stderr or r.stdout)}")
    with open(out) as f:
        rows = json.load(f)["results"]["rows"]
    os.unlink(out)
    m = metrics(a)
    pool = sum(v for k, v in m.items() if k.startswith("rnfs_rdma_pool_bytes{"))
    text = ", ".join(f"{row['conns']} conns {row['rss_kib'] / 1024:.1f} MiB" for row in rows)
    grow = (rows[-1]["rss_kib"] - rows[0]["rss_kib"]) / 1024
    print(f"PERF {a.label}: rnfsd resident with rnfs-bench RDMA connections: {text} "
          f"(+{grow:.1f} MiB from 1 to 256); registered pool {pool / MiB:.1f} MiB, "
          f"registrations {m.get('rnfs_rdma_registrations', 0):.0f}", flush=True)
    check(grow < 64, f"resident memory grew by {grow:.1f} MiB from 1 to 256 RDMA connections")


def guest_busy_ticks():
    """Clock ticks all the guest's CPUs spent busy, from /proc/stat (idle, iowait and steal
    left out)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq = map(int, f.readline().split()[1:8])
    return user + nice + system + irq + softirq


def mount_point_of(path):
    """The mount point `path` is under."""
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def mountstats(mnt):
    """The /proc/self/mountstats block of the NFS mount at `mnt`: its text, and per operation
    (calls, cumulative RTT ms, cumulative execute ms) as the client counted them."""
    with open("/proc/self/mountstats") as f:
        text = f.read()
    for b in text.split("device ")[1:]:
        if f" mounted on {mnt} with fstype nfs" not in b.split("\n", 1)[0]:
            continue
        ops, in_ops = {}, False
        for line in b.splitlines():
            s = line.strip()
            if s.startswith("per-op statistics"):
                in_ops = True
            elif in_ops and ":" in s:
                name, rest = s.split(":", 1)
                f = rest.split()
                if len(f) >= 8 and f[0].isdigit():
                    ops[name] = (int(f[0]), int(f[6]), int(f[7]))
        return b, ops
    raise RuntimeError(f"{mnt} is not in /proc/self/mountstats")


def calls_made(mnt):
    """All NFS calls the client has made on the mount at `mnt` so far."""
    return sum(n for n, _, _ in mountstats(mnt)[1].values())


def op_stats_line(before, after):
    """The calls a case made, per operation (most first): NAME=calls/mean RTT µs/mean execute
    µs, the client's view of each round trip."""
    out = []
    for name, (n, rtt, ex) in after.items():
        n0, rtt0, ex0 = before.get(name, (0, 0, 0))
        if n > n0:
            k = n - n0
            out.append((k, f"{name}={k}/{(rtt - rtt0) * 1000 / k:.0f}/{(ex - ex0) * 1000 / k:.0f}"))
    return " ".join(x for _, x in sorted(out, reverse=True))


def scale_phase(cmds, a):
    """Runs `cmds` (one per client) at once; returns (seconds, server CPU s, guest busy CPU s)."""
    hz = os.sysconf("SC_CLK_TCK")
    cpu0, busy0 = server_cpu_seconds(a), guest_busy_ticks()
    t0 = time.monotonic()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for c in cmds]
    errs = [(p.wait(timeout=1800), p.stderr.read()) for p in procs]
    sec = time.monotonic() - t0
    cpu1, busy1 = server_cpu_seconds(a), guest_busy_ticks()
    for rc, err in errs:
        check(rc == 0, f"{cmds[0][0]}: {one_line(err)}")
    return sec, cpu1 - cpu0, (busy1 - busy0) / hz


def scale_step(roots, a):
    """One round of a scale step, a client per root: {figure: value}."""
    n = len(roots)
    # the seed's split: one 5 GB file, two of 2.5 GB, ... (here --perf-mib MiB in all)
    count = a.perf_mib * 16 // n
    files = [os.path.join(root, f"scale{i}") for i, root in enumerate(roots)]
    w = scale_phase([["dd", "if=/dev/zero", f"of={f}", "bs=64k", f"count={count}",
                      "conv=fsync"] for f in files], a)
    drop_caches()
    r = scale_phase([["dd", f"if={f}", "of=/dev/null", "bs=64k"] for f in files], a)
    for f in files:
        os.unlink(f)
    mb = count * n * 64 * 1024 / 1e6
    fig = {}
    for name, (sec, srv, busy) in (("write", w), ("read", r)):
        fig[f"{name} MB/s"] = mb / sec
        fig[f"{name} server CPU ms/MB"] = srv / mb * 1000
        fig[f"{name} guest CPU ms/MB"] = busy / mb * 1000
    return fig


def figures_text(rounds):
    """Rounds of {figure: value} as 'figure median (min-max), ...' (the value alone for one)."""
    parts = []
    for k in rounds[0]:
        v = sorted(r[k] for r in rounds)
        med = statistics.median(v)
        parts.append(f"{k} {med:.2f}" if len(v) == 1 else f"{k} {med:.2f} ({v[0]:.2f}-{v[-1]:.2f})")
    return f"{len(rounds)} rounds, median (min-max): " + ", ".join(parts)


def case_scale(d, a):
    """Seed 003's scalability test (not in the default cases): 1, 2, 3 and 4 clients, each its
    own mount of the export through another server address (so its own connection: NFSv3, as
    in the seed; the 4.1+ client trunks a server's addresses onto one), write --perf-mib MiB
    between them at once (dd, 64 KiB records as the seed's iozone, fsync at the end), then read
    it back after dropping caches. Per step: aggregate MB/s, the server's CPU ms per MB and the
    whole guest's (server, kernel client, dd and the transport: client and server share one
    machine here, where the seed had one each). Logged as PERF lines."""
    if not a.mount_source:
        raise Skip("needs --mount-source for the extra mounts")
    _, export, dev, prefix = server_interface(a)
    rel = os.path.relpath(d, mount_point_of(d))
    roots = [d]
    added = []
    mounts = []
    try:
        for n in (1, 2, 3, 4):
            while len(roots) < n:
                # addresses of their own (rdmaconns uses .100-.131 and keeps them)
                alias = f"{prefix}.{200 + len(roots)}"
                r = subprocess.run(["ip", "addr", "add", f"{alias}/24", "dev", dev],
                                   capture_output=True, text=True)
                check(r.returncode == 0 or "exists" in r.stderr,
                      f"ip addr add {alias}: {one_line(r.stderr)}")
                if r.returncode == 0:
                    added.append(alias)
                mp = f"/mnt/scale{len(roots)}"
                os.makedirs(mp, exist_ok=True)
                r = subprocess.run(["mount", "-t", "nfs", "-o", a.mount_opts, f"{alias}:{export}",
                                    mp], capture_output=True, text=True, timeout=180)
                check(r.returncode == 0, f"mount of client {len(roots) + 1}: {one_line(r.stderr)}")
                mounts.append(mp)
                roots.append(os.path.join(mp, rel))
            rounds = [scale_step(roots, a) for _ in range(max(1, a.perf_runs))]
            text = figures_text(rounds)
            log(f"PERF {a.label}: scale {n} client(s): {text}")
            print(f"PERF {a.label}: scale {n} client(s): {text}", flush=True)
    finally:
        for mp in mounts:
            subprocess.run(["umount", mp], capture_output=True, timeout=120)
        for alias in added:
            subprocess.run(["ip", "addr", "del", f"{alias}/24", "dev", dev],
                           capture_output=True)


CASES = {
    "smoke": case_smoke,
    "bigfile": case_bigfile,
    "files1000": case_files1000,
    "rename": case_rename,
    "lsdir": case_lsdir,
    "symlink": case_symlink,
    "hardlink": case_hardlink,
    "attrs": case_attrs,
    "posix": case_posix,
    "fsync": case_fsync,
    "fsx": case_fsx,
    "tar": case_tar,
    "sparse": case_sparse,
    "reclaim": case_reclaim,
    "crash": case_crash,
    "rdmapath": case_rdmapath,
    "deleg": case_deleg,
    "perf": case_perf,
    "profile": case_profile,
    "costs": case_costs,
    "bench": case_bench,
    "rdmaconns": case_rdmaconns,
    "scale": case_scale,
}


def one_line(s):
    return " ".join(str(s).split())[:400] or "-"


def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dir", required=True, help="work directory on the mount (created)")
    ap.add_argument("--label", default="server=? vers=? transport=?")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tarball")
    ap.add_argument("--log")
    ap.add_argument("--big-mib", type=int, default=64)
    ap.add_argument("--nfiles", type=int, default=1000)
    ap.add_argument("--ndir", type=int, default=2000)
    ap.add_argument("--fsx-ops", type=int, default=2000)
    ap.add_argument("--vers", default="", help="NFS version of the mount (3, 4.0, 4.1, 4.2)")
    ap.add_argument("--transport", default="", help="transport of the mount (tcp, rdma)")
    ap.add_argument("--metrics-url", help="the server's Prometheus endpoint, for data-path checks")
    ap.add_argument("--restart-cmd", help="shell command that crashes and restarts the server")
    ap.add_argument("--reclaimed-cmd",
                    help="shell command run once the client has reclaimed after a restart")
    ap.add_argument("--hole-mib", type=int, default=1024, help="all-hole file size (v4.2)")
    ap.add_argument("--alt-mib", type=int, default=16, help="alternating data/hole file size")
    ap.add_argument("--perf-mib", type=int, default=256, help="dd size of the perf case")
    ap.add_argument("--perf-runs", type=int, default=1, help="rounds of the perf case")
    ap.add_argument("--idmap-domain",
                    help="NFSv4 domain of who-names (a Kerberos mount: the posix case's ACLs)")
    ap.add_argument("--mount-source", help="ADDR:PATH of the mount, for extra mounts")
    ap.add_argument("--mount-opts", default="", help="options of the mount, for extra mounts")
    ap.add_argument("--opstats", action="store_true",
                    help="after each case, the NFS calls it made per operation with their mean "
                    "round trip and execute time in µs (/proc/self/mountstats)")
    a = ap.parse_args()
    LOG = open(a.log, "a") if a.log else sys.stderr
    failed = 0
    try:
        os.makedirs(a.dir, exist_ok=True)
    except OSError as e:
        for name in a.cases.split(","):
            print(f"RESULT {a.label} case={name} status=FAIL time=0 "
                  f"reason=cannot create the work directory {a.dir}: {one_line(e)}", flush=True)
        return 1
    for name in a.cases.split(","):
        fn = CASES.get(name)
        d = os.path.join(a.dir, name)
        log(f"=== {a.label} case={name}")
        t0 = time.monotonic()
        ops0 = mountstats(mount_point_of(a.dir))[1] if a.opstats else None
        status, reason = "PASS", "-"
        if fn is None:
            status, reason = "FAIL", f"unknown case {name}"
        else:
            try:
                if os.path.lexists(d):
                    shutil.rmtree(d)
                os.mkdir(d)
                fn(d, a)
                if os.listdir(d):
                    raise Fail(f"case left {sorted(os.listdir(d))[:5]} behind")
                os.rmdir(d)
            except Skip as e:
                status, reason = "SKIP", one_line(e)
            except Fail as e:
                status, reason = "FAIL", one_line(e)
            except Exception as e:  # an unexpected errno is a failure of the case too
                status, reason = "FAIL", one_line(f"{type(e).__name__}: {e}")
                log(traceback.format_exc())
        dt = time.monotonic() - t0
        log(f"=== {a.label} case={name} status={status} time={dt:.2f} reason={reason}")
        print(f"RESULT {a.label} case={name} status={status} time={dt:.2f} reason={reason}",
              flush=True)
        if ops0 is not None:
            # shown by tests/vm/run beside the harness's own lines
            ops = op_stats_line(ops0, mountstats(mount_point_of(a.dir))[1])
            print(f"RNFS-VM: opstats {a.label} case={name} {ops}", flush=True)
        failed += status == "FAIL"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
