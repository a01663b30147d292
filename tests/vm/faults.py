#!/usr/bin/env python3
"""Storage faults under a server, seen by the kernel client (the "faults" case of tests/vm/run,
docs/faults.md). The export is a small ext4 on a device-mapper device over a loop device; this
script changes the device's table to inject each fault and mounts nothing itself. The file
system has no journal and its metadata packed at the start of the device (superblock,
bitmaps, inode table, the root directory: --data-sector is where the rest begins), and write
errors are injected past it only: a failed metadata write would leave ext4's bitmaps on the
device behind its memory, and once those buffers were dropped it would find its free space
corrupt (ENOSPC for everything after), which tests ext4 rather than the server. Test files
live in the root directory.

  nospc     a 96 MiB write onto the 64 MiB file system, through the v3 and the v4.2 mount,
            fails with ENOSPC (at a write, the fsync or the close); then 16 MiB that the
            server's administrator had there is removed, and a 4 MiB write through the mount
            reads back exact; over v4.2 also posix_fallocate (ALLOCATE) and copy_file_range
            (COPY) of more than is left fail with ENOSPC
  eio       the device fails every data write (dm-flakey error_writes): an 8 MiB write + fsync
            fails with EIO, and an O_SYNC write (FILE_SYNC) fails at once; through both
            mounts; after the fault is lifted a rewrite reads back exact
  commit    a file created (its name and inode on the disk), 4 MiB written UNSTABLE
            (sync_file_range: the server has it in its page cache, not on disk), then the
            server's writeback of it fails (the fault, and a syncfs of the server's file
            system), the fault is lifted, and the client's fsync
            (COMMIT): it must fail, or else the data must be on the disk (caches dropped).
            A server that answers the COMMIT from a flush that no longer sees the lost
            writeback passes the fsync and loses the data
  dquot     (file system made with the quota feature, mounted usrquota) a user with 8 MiB of
            disk quota writes 16 MiB + fsync through each mount: EDQUOT; with the limit raised
            the user's 4 MiB rewrite reads back exact. A server that writes for a user while
            keeping root's CAP_SYS_RESOURCE is not held to the quota and fails this
  stall     the device stops answering for --stall seconds (dmsetup suspend --noflush
            --nolockfs): 16 writers (files opened O_SYNC before it, 256 KiB writes; half on
            the v3 mount, half on v4.2) wait on it while a probe writes and fsyncs 64 KiB on
            another export of the
            same server (--ok) 2 s into the stall; its time is reported, and with
            --expect-isolation it must be under 3 s (rnfsd keeps threads for the other
            exports; knfsd's threads all wait on the stalled device). After the stall every
            writer's data reads back exact

Prints one "sub=NAME status=PASS|FAIL time=SECS reason=TEXT" line per step and a FAULTS line
with the probe's time; exit status 1 when any step failed.
"""
import argparse
import ctypes
import errno
import hashlib
import os
import subprocess
import sys
import threading
import time

MIB = 1 << 20
KIB = 1 << 10


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from asuser import Failed, as_user, drop_caches  # noqa: E402


def expect(cond, why):
    if not cond:
        raise Failed(why)


def pattern(tag, n):
    """n bytes that are tag's own: a rewrite with another tag is told from stale data."""
    h = hashlib.sha256(tag.encode()).digest()
    return (h * (n // len(h) + 1))[:n]


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
SYNC_FILE_RANGE_WAIT_BEFORE, SYNC_FILE_RANGE_WRITE, SYNC_FILE_RANGE_WAIT_AFTER = 1, 2, 4


def write_out(fd):
    """Writes fd's dirty pages out and waits for them, without a COMMIT (Python's os has no
    sync_file_range). In two calls: all three flags at once make it a WB_SYNC_ALL writeback,
    which the Linux client sends FILE_SYNC; WRITE alone is WB_SYNC_NONE: UNSTABLE WRITEs."""
    for flags in (SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE, SYNC_FILE_RANGE_WAIT_AFTER):
        if LIBC.sync_file_range(fd, 0, 0, flags) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))


class Device:
    """The device-mapper device under the export: its table is the fault."""

    def __init__(self, name, backing, sectors, data_sector):
        self.name, self.backing, self.sectors = name, backing, sectors
        self.data = data_sector

    def _dm(self, *args):
        r = subprocess.run(["dmsetup", *args], capture_output=True, text=True)
        expect(r.returncode == 0, f"dmsetup {' '.join(args)}: {r.stderr.strip()}")

    def table(self, table):
        self._dm("suspend", "--noflush", "--nolockfs", self.name)
        self._dm("load", self.name, "--table", table)
        self._dm("resume", self.name)

    def healthy(self):
        self.table(f"0 {self.sectors} linear {self.backing} 0")

    def failing_writes(self):
        # the file system's own blocks stay writable (see the module's text); the rest fails
        # writes (dm-flakey up 0 s, down 1 s: always down), reads still served
        n = self.sectors - self.data
        self.table(f"0 {self.data} linear {self.backing} 0\n"
                   f"{self.data} {n} flakey {self.backing} {self.data} 0 1 1 error_writes")

    def suspend(self):
        self._dm("suspend", "--noflush", "--nolockfs", self.name)

    def resume_after(self, secs):
        return subprocess.Popen(["sh", "-c", f"sleep {secs}; exec dmsetup resume {self.name}"])


def write_file(path, data, sync=False, chunk=MIB):
    """Writes data and fsyncs (or O_SYNC); returns the errno of the first failure, or 0."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_SYNC if sync else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        return e.errno
    try:
        for off in range(0, len(data), chunk):
            os.write(fd, data[off:off + chunk])
    except OSError as e:
        close_synced(fd, fsync=False)
        return e.errno
    return close_synced(fd, fsync=not sync)


def close_synced(fd, fsync=True):
    """fsyncs (unless told not to) and closes fd; the errno of the first failure, or 0 (an
    NFS client may report a write error at either)."""
    err = 0
    if fsync:
        try:
            os.fsync(fd)
        except OSError as e:
            err = e.errno
    try:
        os.close(fd)
    except OSError as e:
        err = err or e.errno
    return err


def read_back(path, data, what):
    # the server's page cache too (one kernel): the read comes from the device
    drop_caches()
    with open(path, "rb") as f:
        got = f.read()
    expect(len(got) == len(data), f"{what}: {len(got)} bytes read back, {len(data)} written")
    if got != data:
        bad = next(i for i in range(len(data)) if got[i] != data[i])
        raise Failed(f"{what}: differs from what was written at byte {bad}")


def rewrite(d, name, tag, mib=4):
    """After a fault is lifted: a new file's write + fsync succeeds and reads back exact."""
    path = os.path.join(d, name)
    data = pattern(tag, mib * MIB)
    err = write_file(path, data)
    expect(err == 0, f"rewrite of {path} after the fault: {os.strerror(err)}")
    read_back(path, data, f"rewrite of {path}")
    os.unlink(path)


def remove(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def space_back(a, mib, what):
    """Waits until the server's file system has mib MiB free again: a removed file's blocks
    are freed when the server closes its last descriptor of it (both servers keep descriptors
    open for a while after the last call), which a client meets as ENOSPC meanwhile."""
    t0 = time.time()
    while True:
        st = os.statvfs(a.server_dir)
        if st.f_bavail * st.f_frsize >= mib * MIB:
            break
        if time.time() - t0 > 30:
            left = ", ".join(f"{n} {os.lstat(os.path.join(a.server_dir, n)).st_size}"
                             for n in sorted(os.listdir(a.server_dir)))
            raise Failed(f"{what}: {st.f_bavail * st.f_frsize // MIB} MiB free 30 s after "
                         f"the files were removed; the export holds: {left or 'nothing'}")
        time.sleep(0.1)
    took = time.time() - t0
    if took > 0.5:
        print(f"{what}: the removed files' space came back after {took:.1f} s", flush=True)


def drop(*paths):
    """Truncates, then removes, files written through a mount: after ENOSPC the Linux client
    may still hold the file (pages it could not write), and removing it then only renames it
    (.nfsXXXX) while it keeps its blocks; the truncation frees them whatever holds the file."""
    for p in paths:
        try:
            os.truncate(p, 0)
        except FileNotFoundError:
            continue
        remove(p)


def ballast(a, mib):
    """What an administrator frees to lift ENOSPC: a file written on the server's side."""
    path = os.path.join(a.server_dir, "ballast")
    err = write_file(path, pattern("ballast", mib * MIB))
    expect(err == 0, f"writing {mib} MiB of ballast on the server: {os.strerror(err)}")
    return path


def case_nospc(a):
    for label, d in (("v3", a.v3), ("v4.2", a.v4)):
        extra = ballast(a, 16)
        path = os.path.join(d, "fill")
        err = write_file(path, pattern("fill", 96 * MIB))
        expect(err == errno.ENOSPC, f"{label}: 96 MiB onto a 64 MiB file system: "
               f"{os.strerror(err) if err else 'no error'}, not ENOSPC")
        # the fault lifted: space freed on the server, and the client writes again
        remove(extra)
        space_back(a, 12, f"nospc {label}")
        rewrite(d, "after-nospc", f"nospc-{label}")
        drop(path)
        space_back(a, 48, f"nospc {label}")
    # NFSv4.2 ALLOCATE and COPY
    path = os.path.join(a.v4, "alloc")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, 96 * MIB)
        err = 0
    except OSError as e:
        err = e.errno
    os.close(fd)
    drop(path)
    expect(err == errno.ENOSPC, f"posix_fallocate of 96 MiB: "
           f"{os.strerror(err) if err else 'no error'}, not ENOSPC")
    space_back(a, 48, "nospc fallocate")
    src, dst = os.path.join(a.v4, "copy-src"), os.path.join(a.v4, "copy-dst")
    data = pattern("copy", 40 * MIB)
    err = write_file(src, data)
    expect(err == 0, f"writing the copy's 40 MiB source: {os.strerror(err)}")
    fi, fo = os.open(src, os.O_RDONLY), os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err, done = 0, 0
    try:
        while done < len(data):
            n = os.copy_file_range(fi, fo, len(data) - done)
            if n == 0:
                break
            done += n
        os.fsync(fo)
    except OSError as e:
        err = e.errno
    os.close(fi)
    os.close(fo)
    drop(dst)
    expect(err == errno.ENOSPC, f"copy_file_range of 40 MiB with less left: "
           f"{os.strerror(err) if err else 'no error'} after {done} bytes, not ENOSPC")
    read_back(src, data, "the copy's source")
    drop(src)
    space_back(a, 48, "nospc copy")
    rewrite(a.v4, "after-nospc", "nospc-after-copy")


class DqBlk(ctypes.Structure):
    """struct if_dqblk (linux/quota.h)."""
    _fields_ = [("bhardlimit", ctypes.c_uint64), ("bsoftlimit", ctypes.c_uint64),
                ("curspace", ctypes.c_uint64), ("ihardlimit", ctypes.c_uint64),
                ("isoftlimit", ctypes.c_uint64), ("curinodes", ctypes.c_uint64),
                ("btime", ctypes.c_uint64), ("itime", ctypes.c_uint64), ("valid", ctypes.c_uint32)]


def set_quota(device, uid, kib):
    """Q_SETQUOTA of uid's block limits (0: none) on the file system of device."""
    q_setquota, usrquota, qif_blimits = 0x800008, 0, 1
    blk = DqBlk(bhardlimit=kib, bsoftlimit=kib, valid=qif_blimits)
    if LIBC.quotactl((q_setquota << 8) | usrquota, device.encode(), uid, ctypes.byref(blk)) != 0:
        e = ctypes.get_errno()
        raise Failed(f"quotactl(Q_SETQUOTA) on {device}: {os.strerror(e)}")


QUOTA_USER = ("quota-user", 4321, 4321)


def case_dquot(a):
    """A user over a disk quota gets EDQUOT through both mounts; with the limit raised, the
    user's rewrite reads back exact. The server acts as the user: a server thread that keeps
    root's CAP_SYS_RESOURCE while writing for one is not held to the quota."""
    device = f"/dev/mapper/{a.dm}"
    set_quota(device, QUOTA_USER[1], 8 * 1024)
    for label, d in (("v3", a.v3), ("v4.2", a.v4)):
        path = os.path.join(d, "over-quota")
        err = as_user(QUOTA_USER, write_file, path, pattern("dquot", 16 * MIB))
        try:
            size = os.stat(os.path.join(a.server_dir, "over-quota")).st_size
        except FileNotFoundError:
            size = 0
        drop(path)
        expect(err == errno.EDQUOT, f"{label}: 16 MiB by a user with 8 MiB of quota: "
               f"{os.strerror(err) if err else 'no error'}, not EDQUOT ({size} bytes on the "
               f"server)")
        space_back(a, 48, f"dquot {label}")
    set_quota(device, QUOTA_USER[1], 64 * 1024)
    for label, d in (("v3", a.v3), ("v4.2", a.v4)):
        path = os.path.join(d, "after-dquot")
        data = pattern(f"dquot-{label}", 4 * MIB)
        err = as_user(QUOTA_USER, write_file, path, data)
        expect(err == 0, f"{label}: the user's rewrite with the quota raised: {os.strerror(err)}")
        read_back(path, data, f"{label}: the user's rewrite")
        drop(path)


def case_eio(a, dev):
    for label, d in (("v3", a.v3), ("v4.2", a.v4)):
        f1, f2 = os.path.join(d, "eio-fsync"), os.path.join(d, "eio-sync")
        dev.failing_writes()
        try:
            e1 = write_file(f1, pattern(f"eio-{label}", 8 * MIB))
            e2 = write_file(f2, pattern(f"eio-sync-{label}", MIB), sync=True, chunk=256 * KIB)
        finally:
            dev.healthy()
        expect(e1 == errno.EIO, f"{label}: 8 MiB write + fsync on a device failing writes: "
               f"{os.strerror(e1) if e1 else 'no error'}, not EIO")
        expect(e2 == errno.EIO, f"{label}: O_SYNC write on a device failing writes: "
               f"{os.strerror(e2) if e2 else 'no error'}, not EIO")
        remove(f1, f2)
        rewrite(d, "after-eio", f"eio-after-{label}")


def server_state(path, size):
    """Whether the server has the file's data, and what its extents say of it (filefrag:
    delalloc, not written back yet; unwritten, allocated but its writing not completed)."""
    st = os.stat(path)
    if st.st_size != size:
        return False, f"{st.st_size} bytes long, not {size}: the client has not sent the data"
    r = subprocess.run(["filefrag", "-v", path], capture_output=True, text=True)
    flags = sorted({f for line in r.stdout.splitlines()[3:] for f in
                    (line.split()[-1].split(",") if line.strip() and line.split()[0].rstrip(":").isdigit() else [])
                    if f in ("delalloc", "unwritten", "unknown_loc")})
    return True, f"{size} bytes long, extents {','.join(flags) or 'written'}"


def case_commit(a, dev):
    for label, d in (("v3", a.v3), ("v4.2", a.v4)):
        path = os.path.join(d, "commit")
        data = pattern(f"commit-{label}", 4 * MIB)
        # a new file (no O_TRUNC: ext4 writes out at close a file truncated to 0 and written
        # again, auto_da_alloc); its name and inode on the disk first: the fault below is the
        # data's alone
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        subprocess.run(["sync", "-f", a.server_dir], check=False)
        # the device fails first, so that nothing can have written the data before: then
        # WRITE UNSTABLE, no COMMIT (the data in the server's page cache only), and the
        # server's writeback of it, which fails
        dev.failing_writes()
        try:
            os.write(fd, data)
            write_out(fd)
            have, where = server_state(os.path.join(a.server_dir, "commit"), len(data))
            print(f"commit {label}: after the UNSTABLE writes, the server's file is {where}",
                  flush=True)
            expect(have, f"{label}: the UNSTABLE writes did not reach the server: {where}")
            r = subprocess.run(["sync", "-f", a.server_dir], capture_output=True, text=True)
            print(f"commit {label}: the server's syncfs: "
                  f"{r.stderr.strip() or 'no error'}", flush=True)
        finally:
            dev.healthy()
        err = close_synced(fd)
        print(f"commit {label}: fsync after the server's writeback failed: "
              f"{os.strerror(err) if err else 'succeeded'}", flush=True)
        if err == 0:
            read_back(path, data, f"{label}: data whose fsync succeeded")
        else:
            expect(err == errno.EIO, f"{label}: fsync failed with {os.strerror(err)}, not EIO")
        remove(path)
        rewrite(d, "after-commit", f"commit-after-{label}")


def case_stall(a, dev):
    writers, chunk, chunks = 16, 256 * KIB, 8
    datas = [pattern(f"stall-{i}", chunk * chunks) for i in range(writers)]
    paths = [os.path.join(a.v3 if i % 2 else a.v4, f"stall-{i}") for i in range(writers)]
    errs = [None] * writers
    # opened (created) before the stall: the client makes one directory's entries one at a
    # time (the directory's lock), so a create waiting on the device would hold back the
    # other writers on the client instead of on the server
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_SYNC, 0o644) for p in paths]
    subprocess.run(["sync", "-f", a.server_dir], check=False)

    def writer(i):
        try:
            for off in range(0, len(datas[i]), chunk):
                os.write(fds[i], datas[i][off:off + chunk])
            errs[i] = 0
        except OSError as e:
            errs[i] = e.errno
        finally:
            os.close(fds[i])

    dev.suspend()
    # the device comes back after --stall seconds whatever this process does (on a server
    # whose every thread waits for the device, the probe waits for it too): a process of its
    # own, which a hung writer of ours cannot hold back
    resume = dev.resume_after(a.stall)
    resumed_at = time.time() + a.stall
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    try:
        for t in threads:
            t.start()
        time.sleep(2)
        t0 = time.time()
        err = write_file(os.path.join(a.ok, "probe"), pattern("probe", 64 * KIB))
        probe = time.time() - t0
    finally:
        rc = resume.wait()
    print(f"stall: dmsetup resume exited {rc} {time.time() - resumed_at:.1f} s after it was "
          f"due", flush=True)
    for t in threads:
        t.join(120)
    late = time.time() - resumed_at
    remove(os.path.join(a.ok, "probe"))
    print(f"stall: the other export's write + fsync took {probe:.2f} s, from 2 s into a "
          f"{a.stall} s stall; the writers finished {late:.1f} s after it", flush=True)
    print(f"FAULTS stall={a.stall}s probe={probe:.2f}s", flush=True)
    expect(err == 0, f"the probe on the other export: {os.strerror(err)}")
    expect(all(not t.is_alive() for t in threads), "writers still blocked 120 s after the stall")
    for i in range(writers):
        expect(errs[i] == 0, f"writer {i} ({paths[i]}): {os.strerror(errs[i])}")
        read_back(paths[i], datas[i], f"writer {i}")
        remove(paths[i])
    if a.expect_isolation:
        expect(probe < 3, f"the other export's write waited {probe:.1f} s for the stalled device")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--v3", required=True, help="a directory on the NFSv3 mount of the export")
    ap.add_argument("--v4", required=True, help="the same export on an NFSv4.2 mount")
    ap.add_argument("--ok", required=True, help="an NFSv4.2 mount of another export")
    ap.add_argument("--dm", required=True, help="the device-mapper device's name")
    ap.add_argument("--backing", required=True, help="the device under it (a loop device)")
    ap.add_argument("--sectors", type=int, required=True)
    ap.add_argument("--data-sector", type=int, required=True,
                    help="where the file system's data blocks begin (its metadata before)")
    ap.add_argument("--server-dir", required=True, help="the exported directory, server side")
    ap.add_argument("--stall", type=int, default=10)
    ap.add_argument("--expect-isolation", action="store_true")
    ap.add_argument("--steps", default="nospc,eio,commit,stall,dquot")
    a = ap.parse_args()
    dev = Device(a.dm, a.backing, a.sectors, a.data_sector)
    steps = {"nospc": lambda: case_nospc(a), "eio": lambda: case_eio(a, dev),
             "commit": lambda: case_commit(a, dev), "stall": lambda: case_stall(a, dev),
             "dquot": lambda: case_dquot(a)}
    failed = 0
    for name in a.steps.split(","):
        t0 = time.time()
        try:
            steps[name]()
            st, why = "PASS", "-"
        except Failed as e:
            st, why = "FAIL", str(e)
        except OSError as e:
            st, why = "FAIL", f"{e.strerror} ({e.errno}) at {e.filename}"
        if st == "FAIL":
            failed += 1
        print(f"sub={name} status={st} time={time.time() - t0:.2f} reason={why}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
