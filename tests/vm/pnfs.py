#!/usr/bin/env python3
"""pNFS cases for the guest (the "pnfs" case of tests/vm/run): the kernel client mounts an
rnfsd metadata server (MDS) with vers=4.2 whose data servers (DSes) are local NFSv3 exports
(two rnfsd, one knfsd), and writes and reads files; this checks where the bytes went.

  layouts   the mount uses the flexible files layout driver (mountstats: pnfs=LAYOUT_FLEX_FILES)
  spread    --files files of --mib MiB written with large writes: their bytes are on the DSes,
            spread as round-robin placement says, none on the MDS (its files are holes of the
            right size); GETDEVICEINFO and LAYOUTCOMMIT were sent; the MDS wrote no file data
            (its metrics) and the rnfsd DSes took the bytes of their files
  readback  after dropping the client's caches the files read back identical, from the DSes
            (the MDS read no file data)
  remove    removing the files removes their DS files
  truncate  a file the pNFS client has open for writing (a read-write layout out) is truncated
            by an NFSv3 client (another client to the MDS): the layout is recalled
            (CB_LAYOUTRECALL), the truncation goes on, and the pNFS client sees the new size
  rdma      (with --rdma-ds-metrics) the spread and readback I/O to the DS advertised with an
            RDMA address first arrived over RDMA: WRITE data in Read chunks, READ data in
            Write chunks
  bench     rnfs-bench's pnfs mode (--bench) against the MDS: its own LAYOUTGET, GETDEVICEINFO
            and NFSv3 I/O to the DSes (over RDMA to the DS that has an RDMA address, with
            --rdma-ds-metrics); every DS took its files' bytes and gave them back, none went
            through the MDS; its MB/s and LAYOUTGETs per second are printed
  mirror    on a second MDS keeping two mirrors of each file, one DS is killed (SIGKILL)
            during a --mib MiB write: the write completes without an error and reads back
            identical; once the DS is started again its copy is resynchronised (both DS
            files equal the data)

Prints one "sub=NAME status=PASS|FAIL time=SECS reason=TEXT" line per case; exit status 1 when
any failed.
"""
import argparse
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time

from workload import mountstats  # the same directory: python puts it on sys.path


def metric(url, name):
    """The value of the sample `name` (with its labels) at `url`; 0 when absent."""
    import urllib.request
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def io_bytes(url, what, version):
    return metric(url, f'rnfs_nfs_{what}_bytes_total{{version="{version}"}}')


def pattern(seed, n):
    h = hashlib.sha256(str(seed).encode()).digest()
    block = (h * (4096 // len(h) + 1))[:4096]
    return (block * (n // 4096 + 1))[:n]


def drop_caches():
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def ds_files(dirs):
    """{ds dir: [(name, size, blocks)]} of the files in each DS export."""
    out = {}
    for d in dirs:
        out[d] = []
        for n in sorted(os.listdir(d)):
            st = os.stat(os.path.join(d, n))
            out[d].append((n, st.st_size, st.st_blocks))
    return out


class Fail(Exception):
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mnt", required=True, help="the vers=4.2 mount of the MDS")
    ap.add_argument("--mds-export", required=True, help="the MDS's exported directory")
    ap.add_argument("--ds", action="append", required=True,
                    help="a DS's exported directory, in --pnfs-ds order")
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--mds-metrics", required=True, help="the MDS's metrics URL")
    ap.add_argument("--v3-mnt", help="a vers=3 mount of the MDS's export (the truncate case)")
    ap.add_argument("--mirror-mnt", help="a vers=4.2 mount of an MDS with two mirrors per file")
    ap.add_argument("--mirror-ds", action="append", default=[],
                    help="the exported directories of that MDS's two DSes")
    ap.add_argument("--rdma-ds-metrics",
                    help="the metrics of a DS advertised with RDMA first: the client's I/O to it "
                         "must arrive over RDMA (the rdma case; without it, SKIP)")
    ap.add_argument("--kill-ds-cmd", help="kills the first of them with SIGKILL")
    ap.add_argument("--start-ds-cmd", help="starts it again (returns once it is ready)")
    ap.add_argument("--ds-metrics", action="append", default=[],
                    help="DIR=URL: the metrics of the rnfsd DS exporting DIR")
    ap.add_argument("--bench", help="rnfs-bench, for the bench case")
    ap.add_argument("--mds-addr", help="the MDS's address, for rnfs-bench")
    a = ap.parse_args()
    work = os.path.join(a.mnt, "pnfs")
    local = os.path.join(a.mds_export, "pnfs")
    size = a.mib << 20
    names = [f"f{i}" for i in range(a.files)]
    state = {}
    failed = 0
    dsm = dict(x.split("=", 1) for x in a.ds_metrics)

    def case(name, fn):
        nonlocal failed
        t0 = time.monotonic()
        status, reason = "PASS", "-"
        try:
            fn()
        except Fail as e:
            status, reason = "FAIL", str(e)
        except Exception as e:  # an errno is a failure of the case too
            status, reason = "FAIL", f"{type(e).__name__}: {e}"
        failed += status == "FAIL"
        reason = " ".join(reason.split())[:400]
        print(f"sub={name} status={status} time={time.monotonic() - t0:.2f} reason={reason}",
              flush=True)

    def layouts():
        text, _ = mountstats(a.mnt)
        if "pnfs=LAYOUT_FLEX_FILES" not in text:
            line = [x for x in text.splitlines() if "nfsv4:" in x]
            raise Fail(f"no flexfiles layout driver: {line}")

    def spread():
        os.makedirs(work, exist_ok=True)
        before = {d: {n for n, _, _ in v} for d, v in ds_files(a.ds).items()}
        _, ops0 = mountstats(a.mnt)
        mds0 = io_bytes(a.mds_metrics, "write", 4)
        ds0 = {d: io_bytes(u, "write", 3) for d, u in dsm.items()}
        for i, n in enumerate(names):
            data = pattern(i, size)
            fd = os.open(os.path.join(work, n), os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
            try:
                for off in range(0, size, 1 << 20):
                    os.write(fd, data[off:off + (1 << 20)])
                os.fsync(fd)
            finally:
                os.close(fd)
            state[n] = hashlib.sha256(data).hexdigest()
        _, ops1 = mountstats(a.mnt)
        # (the mount's per-operation counts include the I/O to the DSes)
        d = {k: ops1[k][0] - ops0.get(k, (0,))[0] for k in ops1}
        print(f"# ops during the writes: { {k: v for k, v in d.items() if v} }", flush=True)
        for n in names:
            st = os.stat(os.path.join(local, n))
            if st.st_size != size:
                raise Fail(f"the MDS's {n} is {st.st_size} bytes, not {size}")
            if st.st_blocks != 0:
                raise Fail(f"the MDS holds {st.st_blocks * 512} bytes of {n}")
        new = {dd: [(n, s) for n, s, _ in v if n not in before[dd]]
               for dd, v in ds_files(a.ds).items()}
        counts = [len(new[dd]) for dd in a.ds]
        print(f"# files per DS: {dict(zip(a.ds, counts))}", flush=True)
        sizes = [s for v in new.values() for _, s in v]
        if sorted(sizes) != [size] * len(names):
            raise Fail(f"DS files of sizes {sorted(sizes)}, not {len(names)} of {size}")
        # round-robin over the DSes, one copy each
        want = sorted([len(names) // len(a.ds) + (1 if i < len(names) % len(a.ds) else 0)
                       for i in range(len(a.ds))])
        if sorted(counts) != want:
            raise Fail(f"files per DS {counts}, round-robin gives {want}")
        mds_bytes = io_bytes(a.mds_metrics, "write", 4) - mds0
        print(f"# bytes written: MDS {mds_bytes:.0f}, DSes "
              f"{ {d: io_bytes(u, 'write', 3) - ds0[d] for d, u in dsm.items()} }", flush=True)
        if mds_bytes > 0:
            raise Fail(f"{mds_bytes:.0f} bytes were written through the MDS")
        for dd, u in dsm.items():
            got = io_bytes(u, "write", 3) - ds0[dd]
            if got < len(new[dd]) * size:
                raise Fail(f"{dd} took {got:.0f} bytes for {len(new[dd])} files of {size}")
        # (LAYOUTGET goes in the OPEN COMPOUND, counted as OPEN)
        for op in ("GETDEVICEINFO", "LAYOUTCOMMIT"):
            if d.get(op, 0) == 0:
                raise Fail(f"no {op}: {d}")

    def readback():
        if not state:
            raise Fail("nothing written")
        drop_caches()
        mds0 = io_bytes(a.mds_metrics, "read", 4)
        ds0 = sum(io_bytes(u, "read", 3) for u in dsm.values())
        for n in names:
            h = hashlib.sha256()
            with open(os.path.join(work, n), "rb") as f:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
            if h.hexdigest() != state[n]:
                raise Fail(f"{n} reads back different")
        mds_bytes = io_bytes(a.mds_metrics, "read", 4) - mds0
        ds_bytes = sum(io_bytes(u, "read", 3) for u in dsm.values()) - ds0
        print(f"# bytes read: MDS {mds_bytes:.0f}, rnfsd DSes {ds_bytes:.0f}", flush=True)
        if mds_bytes > 0:
            raise Fail(f"{mds_bytes:.0f} bytes were read through the MDS")
        if dsm and ds_bytes == 0:
            raise Fail("nothing was read from the rnfsd DSes")

    def remove():
        on_ds = sum(len(v) for v in ds_files(a.ds).values())
        for n in names:
            os.unlink(os.path.join(work, n))
        os.rmdir(work)
        deadline = time.monotonic() + 30
        while True:
            left = sum(len(v) for v in ds_files(a.ds).values())
            if left == on_ds - len(names):
                return
            if time.monotonic() > deadline:
                raise Fail(f"{left} DS files left of {on_ds} after removing {len(names)}")
            time.sleep(0.5)

    def sha_of(path):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    return h.hexdigest()
                h.update(b)

    def truncate():
        if not a.v3_mnt:
            raise Fail("no --v3-mnt")
        p4 = os.path.join(a.mnt, "trunc")
        fd = os.open(p4, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
        try:
            os.write(fd, pattern(8, 4 << 20))
            os.fsync(fd)
            r0 = metric(a.mds_metrics, "rnfs_pnfs_recalls_total")
            t0 = time.monotonic()
            # under an NLM lock on the MDS (the v3 view is a locking mount, as users have)
            v3fd = os.open(os.path.join(a.v3_mnt, "trunc"), os.O_RDWR)
            try:
                fcntl.lockf(v3fd, fcntl.LOCK_EX)
                os.ftruncate(v3fd, 1000)
                fcntl.lockf(v3fd, fcntl.LOCK_UN)
            finally:
                os.close(v3fd)
            took = time.monotonic() - t0
            r1 = metric(a.mds_metrics, "rnfs_pnfs_recalls_total")
            print(f"# the NFSv3 truncation took {took:.1f} s; recalls {r0:.0f} -> {r1:.0f}",
                  flush=True)
            if r1 <= r0:
                raise Fail("the truncation recalled no layout")
            os.write(fd, b"x")  # through a new layout: at the offset it had, past the end
        finally:
            os.close(fd)
        drop_caches()
        st = os.stat(p4)
        if st.st_size != (4 << 20) + 1:
            raise Fail(f"size {st.st_size} after truncating to 1000 and writing at 4 MiB")
        with open(p4, "rb") as f:
            head = f.read(1000)
            f.seek(1000)
            gap = f.read(4096)
        if head != pattern(8, 1000) or gap != bytes(4096):
            raise Fail("the data after the truncation is not what it should be")
        os.unlink(p4)

    def mirror():
        if not (a.mirror_mnt and len(a.mirror_ds) == 2 and a.kill_ds_cmd and a.start_ds_cmd):
            raise Fail("needs --mirror-mnt, two --mirror-ds, --kill-ds-cmd, --start-ds-cmd")
        before = {d: set(os.listdir(d)) for d in a.mirror_ds}
        data = pattern(77, size)
        want = hashlib.sha256(data).hexdigest()
        p = os.path.join(a.mirror_mnt, "mirrored")
        fd = os.open(p, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o644)
        killed = False
        try:
            for off in range(0, size, 1 << 20):
                if not killed and off >= size // 3:
                    os.fsync(fd)
                    subprocess.run(a.kill_ds_cmd, shell=True, check=True)
                    killed = True
                os.write(fd, data[off:off + (1 << 20)])
            os.fsync(fd)
        finally:
            os.close(fd)
        drop_caches()
        if sha_of(p) != want:
            raise Fail("the file reads back different after a DS was killed")
        new = {d: sorted(set(os.listdir(d)) - before[d]) for d in a.mirror_ds}
        if any(len(v) != 1 for v in new.values()):
            raise Fail(f"not one copy on each DS: {new}")
        subprocess.run(a.start_ds_cmd, shell=True, check=True)
        copies = [os.path.join(d, new[d][0]) for d in a.mirror_ds]
        deadline = time.monotonic() + 120
        while True:
            got = [sha_of(c) for c in copies]
            if got == [want, want]:
                break
            if time.monotonic() > deadline:
                raise Fail(f"the copies were not resynchronised: {[g == want for g in got]}")
            time.sleep(1)
        print(f"# resynchronised after {time.monotonic() - deadline + 120:.1f} s", flush=True)
        os.unlink(p)

    def rdma():
        if not a.rdma_ds_metrics:
            print("sub=rdma status=SKIP time=0 reason=no RDMA data server (no soft-RoCE, or "
                  "PNFS_RDMA=0)", flush=True)
            return
        reads = metric(a.rdma_ds_metrics, "rnfs_rdma_calls_read_chunk_total")
        writes = metric(a.rdma_ds_metrics, "rnfs_rdma_replies_write_chunk_total")
        print(f"# the RDMA DS: {reads:.0f} calls with Read chunks, {writes:.0f} replies with "
              f"Write chunks", flush=True)
        if reads == 0 or writes == 0:
            raise Fail("the client's I/O to the RDMA data server did not go over RDMA")

    def bench():
        if not (a.bench and a.mds_addr):
            raise Fail("needs --bench and --mds-addr")
        if not os.access(a.bench, os.X_OK):
            raise Fail(f"{a.bench} missing")
        out = "/tmp/pnfs-bench.json"
        files = len(a.ds)
        mds0 = [io_bytes(a.mds_metrics, w, 4) for w in ("write", "read")]
        rdma0 = (metric(a.rdma_ds_metrics, "rnfs_rdma_calls_read_chunk_total")
                 if a.rdma_ds_metrics else 0)
        cmd = [a.bench, "pnfs", "--server", a.mds_addr, "--port", "2049", "--proto", "v4.2",
               "--export", "/", "--files", str(files), "--file-size", f"{a.mib}m",
               "--layoutgets", "1000", "--ds-transport", "rdma" if a.rdma_ds_metrics else "tcp",
               "--quiet", "--json", out]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise Fail(f"rnfs-bench pnfs: {(r.stderr or r.stdout).strip()[-300:]}")
        with open(out) as f:
            res = json.load(f)["results"]
        os.unlink(out)
        per = res["data_servers"]
        print(f"# rnfs-bench pnfs: write {res['write_mb_s']:.0f} MB/s, read "
              f"{res['read_mb_s']:.0f} MB/s, {res['layoutget_pairs_per_s']:.0f} LAYOUTGET + "
              f"LAYOUTRETURN pairs/s; per DS {per}", flush=True)
        size = a.mib << 20
        # round-robin: one file on each DS, written and read back whole
        if len(per) != len(a.ds) or any(d["bytes_written"] != size or d["bytes_read"] != size
                                        for d in per):
            raise Fail(f"bytes per DS {per}, {size} each expected")
        mds = [io_bytes(a.mds_metrics, w, 4) - b for w, b in zip(("write", "read"), mds0)]
        if any(mds):
            raise Fail(f"bytes through the MDS (written, read): {mds}")
        if a.rdma_ds_metrics:
            if not any(d["transport"] == "rdma" for d in per):
                raise Fail("no DS was reached over RDMA")
            got = metric(a.rdma_ds_metrics, "rnfs_rdma_calls_read_chunk_total") - rdma0
            if got == 0:
                raise Fail("the RDMA DS took no WRITE in Read chunks")

    case("layouts", layouts)
    case("spread", spread)
    case("readback", readback)
    if a.rdma_ds_metrics:
        case("rdma", rdma)
    else:
        rdma()
    case("remove", remove)
    case("truncate", truncate)
    case("bench", bench)
    case("mirror", mirror)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
