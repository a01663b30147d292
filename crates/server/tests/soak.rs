//! The loopback soak: mixed clients against one rnfsd for a while, with the server killed
//! (SIGKILL) and started again every few seconds and a storage fault (a 10 s stall of writes,
//! ENOSPC, EIO on flush: the fault layer of common/fault.rs) every few more; at the end every
//! file checks out, the server's memory and descriptors stayed bounded, and its log has no error.
//!
//! Clients (raw NFSv3 and NLM over TCP, each resending a call whose connection broke on a new
//! one once the server answers again, as a hard mount does):
//! - fsx: random writes (UNSTABLE, then COMMIT; all resent when the verifier changed), size
//!   changes and reads of one file, checked against a model of its content;
//! - counter: two lock owners add one to a number in a file under an NLM lock, reclaiming it
//!   after a restart; the file keeps each owner's count, so a lost update or a lock held twice
//!   shows, and an increment whose reply a restart took is resolved by its owner's count;
//! - churn: create, write, rename, remove in a directory; a REMOVE or RENAME resent to a
//!   restarted server (its reply cache is gone) is answered NOENT having taken effect: counted,
//!   accepted when the names show it; the directory holds exactly the expected names at the end;
//! - seq: 8 MiB in 1 MiB UNSTABLE writes and a COMMIT, read back whole; the target of the
//!   faults (the calls the fault hits are retried until they succeed).
//!
//! Length and pace from the environment: SOAK_SECS (default 25), SOAK_RESTART_EVERY (8),
//! SOAK_FAULT_EVERY (7); SOAK_CSV=FILE keeps the RSS and descriptor samples. The hour:
//! `SOAK_SECS=3600 SOAK_RESTART_EVERY=120 SOAK_FAULT_EVERY=90 SOAK_CSV=soak.csv cargo test
//! --release -p rnfs-server --test soak -- --nocapture` (docs/faults.md).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::fault::FaultLayer;
use common::nfs3_res::sattr3;
use common::nlm::{lockargs, nlm_lock};
use common::*;
use nfs3wire::*;
use nlmwire::*;
use xdr::{Decode, Encode};

/// The file the faults hit (a name no temporary directory's path contains).
const SEQ: &str = "soak-seq-faulty";

fn env_secs(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A client that outlives the server's restarts: a call whose connection breaks (or that
/// gets no reply in 60 s) is sent again on a new connection once the server answers.
struct Hard {
    port: u16,
    c: Option<RpcClient>,
    /// New connections after the first: each is a restart (or a lost reply) seen.
    reconnects: u64,
}

impl Hard {
    fn new(port: u16) -> Hard {
        Hard {
            port,
            c: None,
            reconnects: 0,
        }
    }

    fn try_once(&mut self, prog: u32, vers: u32, p: u32, args: &dyn Encode) -> io::Result<Bytes> {
        if self.c.is_none() {
            let c = RpcClient::try_connect(self.port)?;
            c.set_read_timeout(Duration::from_secs(60));
            self.c = Some(c);
        }
        let c = self.c.as_mut().expect("connected");
        let (xid, body) = c.build_call(prog, vers, p, args);
        c.send_record(&body)?;
        loop {
            let (rxid, r) = parse_reply(c.read_record()?);
            if rxid != xid {
                continue;
            }
            return match r {
                RpcReply::Success(body) => Ok(body),
                other => Err(io::Error::other(format!(
                    "program {prog} procedure {p}: {other:?}"
                ))),
            };
        }
    }

    /// The call's decoded result, however many connections it takes (5 minutes at most).
    fn call<R: Decode>(&mut self, prog: u32, vers: u32, p: u32, args: &dyn Encode) -> R {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            match self.try_once(prog, vers, p, args) {
                Ok(body) => return decode_all(body),
                Err(e) if e.kind() == io::ErrorKind::Other => panic!("{e}"),
                Err(e) => {
                    assert!(Instant::now() < deadline, "no server for 5 minutes: {e}");
                    if self.c.take().is_some() {
                        self.reconnects += 1;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }

    fn nfs<R: Decode>(&mut self, p: u32, args: &dyn Encode) -> R {
        self.call(NFS3_PROGRAM, NFS_V3, p, args)
    }

    fn write(&mut self, fh: &NfsFh3, off: u64, data: &Bytes, stable: StableHow) -> Write3res {
        self.nfs(NFSPROC3_WRITE, &write_args(fh, off, data.clone(), stable))
    }

    fn commit(&mut self, fh: &NfsFh3) -> Commit3res {
        let args = Commit3args {
            file: fh.clone(),
            offset: 0,
            count: 0,
        };
        self.nfs(NFSPROC3_COMMIT, &args)
    }

    fn read(&mut self, fh: &NfsFh3, offset: u64, count: u32) -> Read3resok {
        let args = Read3args {
            file: fh.clone(),
            offset,
            count,
        };
        self.nfs::<Read3res>(NFSPROC3_READ, &args).expect_ok("READ")
    }

    fn read_all(&mut self, fh: &NfsFh3) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let r = self.read(fh, out.len() as u64, 1 << 20);
            out.extend_from_slice(r.data.in_memory().expect("decoded"));
            if r.eof {
                return out;
            }
            assert!(r.count > 0, "READ returned no data before eof");
        }
    }

    fn lookup(&mut self, dir: &NfsFh3, name: &str) -> Lookup3res {
        self.nfs(NFSPROC3_LOOKUP, &diropargs(dir, name))
    }

    fn create(&mut self, dir: &NfsFh3, name: &str) -> NfsFh3 {
        let args = Create3args {
            r#where: diropargs(dir, name),
            how: Createhow3::Unchecked(sattr3()),
        };
        match self
            .nfs::<Create3res>(NFSPROC3_CREATE, &args)
            .expect_ok("CREATE")
            .obj
            .0
        {
            Some(fh) => fh,
            None => self.lookup(dir, name).expect_ok("LOOKUP").object,
        }
    }
}

fn diropargs(dir: &NfsFh3, name: &str) -> Diropargs3 {
    Diropargs3 {
        dir: dir.clone(),
        name: Bytes::from(name.to_string()),
    }
}

/// What one client did, and what went wrong.
#[derive(Default)]
struct Outcome {
    failures: Vec<String>,
    notes: Vec<String>,
    /// A counter owner's: its number and the increments it made.
    made: Option<(usize, u64)>,
}

/// A small deterministic generator (xorshift), seeded per client.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn bytes(&mut self, n: usize) -> Bytes {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Writes made UNSTABLE since the last COMMIT that covered them, to send again when a COMMIT
/// shows another verifier (the server restarted, or a flush failed).
#[derive(Default)]
struct Unstable {
    writes: Vec<(u64, Bytes, Writeverf3)>,
}

impl Unstable {
    fn write(&mut self, c: &mut Hard, fh: &NfsFh3, off: u64, data: Bytes) -> Result<(), Nfsstat3> {
        let r = c.write(fh, off, &data, StableHow::Unstable);
        let ok = r.into_ok().map_err(|r| r.status())?;
        self.writes.push((off, data, ok.verf));
        Ok(())
    }

    /// COMMITs until the verifier is the one every write got, sending them all again when it
    /// is not; `retry` says whether an error is one to wait out (a fault being injected).
    fn commit(
        &mut self,
        c: &mut Hard,
        fh: &NfsFh3,
        retry: impl Fn(Nfsstat3) -> bool,
        resent: &mut u64,
    ) -> Result<(), Nfsstat3> {
        loop {
            if self.writes.is_empty() {
                return Ok(());
            }
            let verf = match c.commit(fh).into_ok() {
                Ok(ok) => Some(ok.verf),
                Err(r) if retry(r.status()) => None,
                Err(r) => return Err(r.status()),
            };
            if let Some(v) = verf {
                if self.writes.iter().all(|w| w.2 == v) {
                    self.writes.clear();
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
            for w in &mut self.writes {
                *resent += 1;
                loop {
                    match c.write(fh, w.0, &w.1, StableHow::Unstable).into_ok() {
                        Ok(ok) => {
                            w.2 = ok.verf;
                            break;
                        }
                        Err(r) if retry(r.status()) => {
                            std::thread::sleep(Duration::from_millis(100))
                        }
                        Err(r) => return Err(r.status()),
                    }
                }
            }
        }
    }
}

/// fsx: writes, size changes and reads of one file against a model of it.
fn fsx(port: u16, root: NfsFh3, stop: Arc<AtomicBool>, ops: Arc<AtomicU64>) -> Outcome {
    const SPAN: u64 = 768 << 10;
    let mut out = Outcome::default();
    let mut c = Hard::new(port);
    let fh = c.create(&root, "fsx");
    let mut rng = Rng(0x5eed_f5c5);
    let mut model: Vec<u8> = Vec::new();
    let mut pending = Unstable::default();
    let mut resent = 0;
    let never = |_: Nfsstat3| false;
    while !stop.load(Ordering::Relaxed) && out.failures.is_empty() {
        let op = rng.below(10);
        let r = match op {
            0..=5 => {
                let off = rng.below(SPAN);
                let len = 1 + rng.below(64 << 10) as usize;
                let data = rng.bytes(len);
                let end = off as usize + data.len();
                if model.len() < end {
                    model.resize(end, 0);
                }
                model[off as usize..end].copy_from_slice(&data);
                pending.write(&mut c, &fh, off, data)
            }
            6 => pending.commit(&mut c, &fh, never, &mut resent),
            7 => pending
                .commit(&mut c, &fh, never, &mut resent)
                .and_then(|()| {
                    let size = rng.below(SPAN + (64 << 10));
                    let args = Setattr3args {
                        object: fh.clone(),
                        new_attributes: Sattr3 {
                            size: SetSize3(Some(size)),
                            ..sattr3()
                        },
                        guard: Sattrguard3(None),
                    };
                    let r: Setattr3res = c.nfs(NFSPROC3_SETATTR, &args);
                    model.resize(size as usize, 0);
                    r.into_ok().map(|_| ()).map_err(|r| r.status())
                }),
            _ => pending.commit(&mut c, &fh, never, &mut resent).map(|()| {
                let off = rng.below(model.len() as u64 + 4096);
                let count = 1 + rng.below(64 << 10) as u32;
                let r = c.read(&fh, off, count);
                let got = r.data.in_memory().expect("decoded");
                let from = (off as usize).min(model.len());
                let want = &model[from..(from + count as usize).min(model.len())];
                if got != want || r.eof != (from + got.len() >= model.len()) {
                    out.failures.push(format!(
                        "fsx: READ {off}+{count} of a {}-byte file: {} bytes (eof {}) differ from \
                         the {} written",
                        model.len(),
                        got.len(),
                        r.eof,
                        want.len()
                    ));
                }
            }),
        };
        if let Err(s) = r {
            out.failures.push(format!("fsx: op {op}: {s:?}"));
        }
        if ops.fetch_add(1, Ordering::Relaxed) % 500 == 499 {
            let whole = c.read_all(&fh);
            if whole != model {
                out.failures.push(format!(
                    "fsx: file of {} bytes differs from the model ({})",
                    whole.len(),
                    model.len()
                ));
            }
        }
    }
    if out.failures.is_empty() {
        match pending.commit(&mut c, &fh, never, &mut resent) {
            Err(s) => out.failures.push(format!("fsx: last COMMIT: {s:?}")),
            Ok(()) if c.read_all(&fh) != model => out
                .failures
                .push("fsx: file differs from the model at the end".into()),
            Ok(()) => {}
        }
    }
    out.notes.push(format!(
        "fsx: {resent} writes sent again after a verifier change"
    ));
    out
}

/// The counter file: the total and each owner's part, "total a b".
fn counter_read(c: &mut Hard, fh: &NfsFh3) -> [u64; 3] {
    let r = c.read(fh, 0, 64);
    let text = String::from_utf8_lossy(r.data.in_memory().expect("decoded")).to_string();
    let v: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    [0, 1, 2].map(|i| v.get(i).copied().unwrap_or(0))
}

/// One lock owner of the counter: lock, read, add one to the total and to its part, write
/// FILE_SYNC, unlock.
fn counter(
    who: usize,
    port: u16,
    fh: NfsFh3,
    stop: Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
) -> Outcome {
    let mut out = Outcome::default();
    let mut c = Hard::new(port);
    let host = format!("soak-host-{who}");
    let lock = nlm_lock(&host, 7 + who as u32, &fh.data, 0, 0);
    let mut made = 0u64;
    let mut resolved = 0;
    let acquire = |c: &mut Hard, reclaim: bool| -> Result<(), String> {
        let mut args = lockargs(lock.clone(), false);
        args.reclaim = reclaim;
        loop {
            let r: Nlm4Res = c.call(NLM_PROG, NLM_VERS4, NLM4_LOCK, &args);
            match r.stat.stat {
                Nlm4Stats::nlm4_granted => return Ok(()),
                // a reclaim after grace, or one for a lock never lost: a new lock then
                Nlm4Stats::nlm4_denied_grace_period | Nlm4Stats::nlm4_denied if reclaim => {
                    args.reclaim = false
                }
                Nlm4Stats::nlm4_denied_grace_period | Nlm4Stats::nlm4_denied => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                s => return Err(format!("counter {who}: LOCK {s:?}")),
            }
        }
    };
    while !stop.load(Ordering::Relaxed) && out.failures.is_empty() {
        if let Err(e) = acquire(&mut c, false) {
            out.failures.push(e);
            break;
        }
        let seen = c.reconnects;
        let v = counter_read(&mut c, &fh);
        if c.reconnects != seen {
            // the lock went with a restart before the write: take it again, read again
            if let Err(e) = acquire(&mut c, true) {
                out.failures.push(e);
            }
            continue;
        }
        if v[1 + who] != made || v[0] != v[1] + v[2] {
            out.failures.push(format!(
                "counter {who}: file says {v:?} after {made} increments of mine"
            ));
            break;
        }
        let mut next = v;
        next[0] += 1;
        next[1 + who] += 1;
        let text = Bytes::from(format!("{} {} {}\n", next[0], next[1], next[2]));
        let w = c.write(&fh, 0, &text, StableHow::FileSync);
        if c.reconnects != seen {
            // a restart meanwhile: the lock is reclaimed, and the file says whether the
            // write whose reply was lost was done
            if let Err(e) = acquire(&mut c, true) {
                out.failures.push(e);
                break;
            }
            let after = counter_read(&mut c, &fh);
            if after[1 + who] == made + 1 {
                made += 1;
            }
            resolved += 1;
        } else if w.is_ok() {
            made += 1;
        } else {
            out.failures
                .push(format!("counter {who}: WRITE {:?}", w.status()));
            break;
        }
        // an UNLOCK resent to a restarted server in its grace period waits it out, as the
        // Linux client's does (lockd answers any call but a reclaim so then)
        let unlock = Nlm4Unlockargs {
            cookie: Bytes::from_static(b"ck"),
            alock: lock.clone(),
        };
        loop {
            let r: Nlm4Res = c.call(NLM_PROG, NLM_VERS4, NLM4_UNLOCK, &unlock);
            match r.stat.stat {
                Nlm4Stats::nlm4_granted => break,
                Nlm4Stats::nlm4_denied_grace_period => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                s => {
                    out.failures.push(format!("counter {who}: UNLOCK {s:?}"));
                    break;
                }
            }
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
    out.notes.push(format!(
        "counter {who}: {made} increments, {resolved} across a restart"
    ));
    out.made = Some((who, made));
    out
}

/// Directory churn: create, write, rename, remove; replays of REMOVE and RENAME accepted
/// when the names show they took effect.
fn churn(port: u16, root: NfsFh3, stop: Arc<AtomicBool>, ops: Arc<AtomicU64>) -> Outcome {
    const KEEP: u64 = 16;
    let mut out = Outcome::default();
    let mut c = Hard::new(port);
    let dir = match c.nfs::<Mkdir3res>(
        NFSPROC3_MKDIR,
        &Mkdir3args {
            r#where: diropargs(&root, "churn"),
            attributes: sattr3(),
        },
    ) {
        Mkdir3res::Ok(ok) => ok.obj.0.expect("MKDIR handle"),
        _ => c.lookup(&root, "churn").expect_ok("LOOKUP churn").object,
    };
    let mut replays = 0;
    let mut i = 0u64;
    let absent =
        |c: &mut Hard, name: &str| c.lookup(&dir, name).status() == Nfsstat3::NFS3ERR_NOENT;
    while !stop.load(Ordering::Relaxed) && out.failures.is_empty() {
        let name = format!("n{i}");
        let done = format!("r{i}");
        let fh = c.create(&dir, &name);
        let text = Bytes::from(name.clone());
        if let Err(r) = c.write(&fh, 0, &text, StableHow::FileSync).into_ok() {
            out.failures
                .push(format!("churn: WRITE {name}: {:?}", r.status()));
            break;
        }
        let args = Rename3args {
            from: diropargs(&dir, &name),
            to: diropargs(&dir, &done),
        };
        match c.nfs::<Rename3res>(NFSPROC3_RENAME, &args).status() {
            Nfsstat3::NFS3_OK => {}
            Nfsstat3::NFS3ERR_NOENT if absent(&mut c, &name) && !absent(&mut c, &done) => {
                replays += 1
            }
            s => out.failures.push(format!("churn: RENAME {name}: {s:?}")),
        }
        let got = c.lookup(&dir, &done).expect_ok("LOOKUP renamed").object;
        if *c.read(&got, 0, 64).data.in_memory().expect("decoded") != text {
            out.failures
                .push(format!("churn: {done} does not hold what was written"));
        }
        if i >= KEEP {
            let old = format!("r{}", i - KEEP);
            match c
                .nfs::<Remove3res>(NFSPROC3_REMOVE, &diropargs(&dir, &old))
                .status()
            {
                Nfsstat3::NFS3_OK => {}
                Nfsstat3::NFS3ERR_NOENT if absent(&mut c, &old) => replays += 1,
                s => out.failures.push(format!("churn: REMOVE {old}: {s:?}")),
            }
        }
        i += 1;
        ops.fetch_add(1, Ordering::Relaxed);
    }
    // exactly the last KEEP names are left
    let want: BTreeSet<String> = (i.saturating_sub(KEEP)..i)
        .map(|k| format!("r{k}"))
        .collect();
    let mut have = BTreeSet::new();
    let mut cookie = 0;
    let mut verf = [0u8; 8];
    loop {
        let args = Readdir3args {
            dir: dir.clone(),
            cookie,
            cookieverf: verf,
            count: 32 << 10,
        };
        let r = c
            .nfs::<Readdir3res>(NFSPROC3_READDIR, &args)
            .expect_ok("READDIR");
        for e in &r.reply.entries {
            let n = String::from_utf8_lossy(&e.name).to_string();
            if n != "." && n != ".." {
                have.insert(n);
            }
            cookie = e.cookie;
        }
        verf = r.cookieverf;
        if r.reply.eof || r.reply.entries.is_empty() {
            break;
        }
    }
    if out.failures.is_empty() && have != want {
        out.failures.push(format!(
            "churn: directory holds {} names, {} expected (extra {:?}, missing {:?})",
            have.len(),
            want.len(),
            have.difference(&want).take(5).collect::<Vec<_>>(),
            want.difference(&have).take(5).collect::<Vec<_>>()
        ));
    }
    out.notes.push(format!(
        "churn: {i} files, {replays} REMOVE/RENAME replays found done"
    ));
    out
}

/// Sequential I/O under the faults: 8 MiB written, committed, read back, again and again.
fn seq(port: u16, root: NfsFh3, stop: Arc<AtomicBool>, ops: Arc<AtomicU64>) -> Outcome {
    const CHUNK: usize = 1 << 20;
    let mut out = Outcome::default();
    let mut c = Hard::new(port);
    let fh = c.create(&root, SEQ);
    let fault = |s: Nfsstat3| matches!(s, Nfsstat3::NFS3ERR_IO | Nfsstat3::NFS3ERR_NOSPC);
    let (mut resent, mut waited) = (0, 0u64);
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) && out.failures.is_empty() {
        let mut rng = Rng(0x5e9_0000 + round);
        let data = rng.bytes(8 * CHUNK);
        let mut pending = Unstable::default();
        for (k, chunk) in data.chunks(CHUNK).enumerate() {
            let chunk = data.slice_ref(chunk);
            loop {
                match pending.write(&mut c, &fh, (k * CHUNK) as u64, chunk.clone()) {
                    Ok(()) => break,
                    Err(s) if fault(s) => {
                        waited += 1;
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    Err(s) => {
                        out.failures.push(format!("seq: WRITE {s:?}"));
                        return out;
                    }
                }
            }
        }
        if let Err(s) = pending.commit(&mut c, &fh, fault, &mut resent) {
            out.failures.push(format!("seq: COMMIT {s:?}"));
            break;
        }
        let back = c.read_all(&fh);
        if back != data {
            out.failures.push(format!(
                "seq: round {round}: {} bytes read back differ",
                back.len()
            ));
        }
        round += 1;
        ops.fetch_add(1, Ordering::Relaxed);
    }
    out.notes.push(format!(
        "seq: {round} rounds of 8 MiB, {waited} writes failed by a fault and retried, {resent} \
         sent again after a verifier change"
    ));
    out
}

/// The server's resident memory (KiB) and open descriptors.
fn sample(pid: u32) -> Option<(u64, usize)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some((rss, fds))
}

#[test]
fn mixed_clients_through_restarts_and_storage_faults() {
    let total = Duration::from_secs(env_secs("SOAK_SECS", 25));
    let restart_every = Duration::from_secs(env_secs("SOAK_RESTART_EVERY", 8));
    let fault_every = Duration::from_secs(env_secs("SOAK_FAULT_EVERY", 7));
    let faults = FaultLayer::build();
    let mut fx = Fixture::with_args_env(&["--lease-time", "5"], &faults.env());
    // the same port after each restart, as a server's address is
    let mut cfg = fx.server.config();
    cfg.port = Some(fx.server.port);
    let port = fx.server.port;
    let (mut c, root) = fx.connect();
    let counter_fh = c.create_ok(&root, "counter", 0o666);
    drop(c);

    let stop = Arc::new(AtomicBool::new(false));
    let names = ["fsx", "counter0", "counter1", "churn", "seq"];
    let ops: Vec<Arc<AtomicU64>> = names.iter().map(|_| Arc::default()).collect();
    let mut workers = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (stop, ops, root, cfh) = (
            stop.clone(),
            ops[i].clone(),
            root.clone(),
            counter_fh.clone(),
        );
        let run: Box<dyn FnOnce() -> Outcome + Send> = match *name {
            "fsx" => Box::new(move || fsx(port, root, stop, ops)),
            "counter0" => Box::new(move || counter(0, port, cfh, stop, ops)),
            "counter1" => Box::new(move || counter(1, port, cfh, stop, ops)),
            "churn" => Box::new(move || churn(port, root, stop, ops)),
            _ => Box::new(move || seq(port, root, stop, ops)),
        };
        workers.push((*name, std::thread::spawn(run)));
    }

    // the schedule: restarts, and faults on the seq file between them
    let kinds = [
        ("stall", 0),
        ("pwrite", libc::ENOSPC),
        ("fdatasync", libc::EIO),
    ];
    let start = Instant::now();
    let mut next_restart = restart_every;
    let mut next_fault = fault_every / 2;
    let (mut restarts, mut fault_count) = (0, 0);
    let mut lives: Vec<(u32, u64, u64, usize, usize)> = Vec::new(); // pid, RSS first/max, fds first/max
    let mut csv = String::from("seconds,pid,rss_kib,fds\n");
    let mut stall_progress = Vec::new();
    while start.elapsed() < total {
        let pid = fx.server.pid();
        if let Some((rss, fds)) = sample(pid) {
            csv.push_str(&format!(
                "{},{pid},{rss},{fds}\n",
                start.elapsed().as_secs()
            ));
            match lives.last_mut() {
                Some(l) if l.0 == pid => {
                    l.2 = l.2.max(rss);
                    l.4 = l.4.max(fds);
                }
                _ => lives.push((pid, rss, rss, fds, fds)),
            }
        }
        let now = start.elapsed();
        if now >= next_restart {
            fx.server.crash();
            fx.server.start_again(cfg.clone());
            restarts += 1;
            next_restart += restart_every;
        } else if now >= next_fault {
            let (op, errno) = kinds[fault_count % kinds.len()];
            let before: Vec<u64> = ops.iter().map(|o| o.load(Ordering::Relaxed)).collect();
            let lives_before = restarts;
            if op == "stall" {
                faults.stall("pwrite", 10_000, SEQ);
                std::thread::sleep(Duration::from_secs(10));
            } else {
                faults.set(op, errno, SEQ);
                std::thread::sleep(Duration::from_secs(3));
            }
            faults.clear();
            if op == "stall" && restarts == lives_before {
                // what the others did while one file's writes stood still
                let moved: Vec<u64> = ops
                    .iter()
                    .zip(&before)
                    .map(|(o, b)| o.load(Ordering::Relaxed) - b)
                    .collect();
                stall_progress.push(moved);
            }
            fault_count += 1;
            next_fault += fault_every;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    let mut made = [0u64; 2];
    for (name, w) in workers {
        match w.join() {
            Ok(o) => {
                for n in &o.notes {
                    eprintln!("soak: {n}");
                }
                if let Some((who, k)) = o.made {
                    made[who] = k;
                }
                failures.extend(o.failures);
            }
            Err(p) => failures.push(format!(
                "{name} panicked: {}",
                p.downcast_ref::<String>().cloned().unwrap_or_default()
            )),
        }
    }
    // the counter: each owner's part is what it made, and the total their sum
    let mut c = Hard::new(port);
    let v = counter_read(&mut c, &counter_fh);
    if v != [made[0] + made[1], made[0], made[1]] {
        failures.push(format!(
            "counter: file says {v:?}, increments made {made:?}"
        ));
    }
    let per: Vec<String> = names
        .iter()
        .zip(&ops)
        .map(|(n, o)| format!("{n} {}", o.load(Ordering::Relaxed)))
        .collect();
    eprintln!(
        "soak: {} s, {restarts} restarts, {fault_count} faults; operations: {}",
        start.elapsed().as_secs(),
        per.join(", ")
    );
    for (pid, rss0, rss, fds0, fds) in &lives {
        eprintln!(
            "soak: life {pid}: RSS {} -> max {} MiB, descriptors {fds0} -> max {fds}",
            rss0 / 1024,
            rss / 1024
        );
    }
    eprintln!("soak: operations of each client during each 10 s stall of the seq file: {stall_progress:?}");
    if let Ok(path) = std::env::var("SOAK_CSV") {
        std::fs::write(&path, &csv).expect("write SOAK_CSV");
    }
    // bounded: no life ends far above where the first one got to
    let (rss_max, fds_max) = lives
        .iter()
        .fold((0, 0), |a, l| (a.0.max(l.2), a.1.max(l.4)));
    assert!(rss_max < 512 << 10, "RSS reached {} MiB", rss_max / 1024);
    assert!(fds_max < 1024, "descriptors reached {fds_max}");
    // while one file's writes stood still, the counter, churn and fsx went on
    for moved in &stall_progress {
        assert!(
            moved[0] > 0 && moved[1] + moved[2] > 0 && moved[3] > 0,
            "clients of other files stopped during a stall: {moved:?}"
        );
    }
    let log = fx.server.log_text();
    let mut warns: BTreeMap<String, usize> = BTreeMap::new();
    for l in log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
    {
        let key: String = l
            .split_once(" WARN ")
            .or(l.split_once(" ERROR "))
            .map(|x| x.1)
            .unwrap_or(l)
            .chars()
            .map(|ch| if ch.is_ascii_digit() { 'N' } else { ch })
            .collect();
        *warns.entry(key).or_default() += 1;
    }
    for (w, n) in &warns {
        eprintln!("soak log: {n:6} {w}");
    }
    // the one warning expected is the injected faults' own
    let unexplained: Vec<&String> = warns
        .keys()
        .filter(|w| !w.starts_with("vfs::fs: a write or flush failed"))
        .collect();
    assert!(
        unexplained.is_empty() && !log.contains("panicked"),
        "unexplained warnings or errors in the server's log: {unexplained:?}"
    );
    assert!(
        restarts >= 1 || total < restart_every,
        "no restart happened"
    );
    assert!(
        failures.is_empty(),
        "soak failures:\n{}",
        failures.join("\n")
    );
}
