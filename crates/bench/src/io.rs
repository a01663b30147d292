//! Building blocks the modes share: a work directory, parallel tasks, sequential transfers.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::task::JoinSet;

use crate::client::{Conn, File, Session};
use crate::err;
use crate::error::Result;
use crate::progress::Progress;

/// A buffer of `len` pseudo-random bytes (so that no layer can shortcut zeros), page-aligned
/// like every buffer the client copies through the kernel (sunrpc::bufpool says why).
pub fn pattern(len: usize) -> Bytes {
    let mut v = sunrpc::bufpool::PageAligned::new(len);
    let mut x: u64 = 0x243f_6a88_85a3_08d3;
    for c in v.as_mut_slice().chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        c.copy_from_slice(&b[..c.len()]);
    }
    Bytes::from_owner(v)
}

/// Runs `f(0)..f(n-1)` as concurrent tasks; returns their results in index order.
pub async fn par<T, F, Fut>(n: usize, f: F) -> Result<Vec<T>>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let mut set = JoinSet::new();
    for i in 0..n {
        let fut = f(i);
        set.spawn(async move { (i, fut.await) });
    }
    // Every task runs to its end (none is aborted, so no call is left half done); the first
    // error is returned. A failing run stops quickly anyway: its other tasks fail the same way,
    // and every call has a timeout.
    let mut out: Vec<(usize, T)> = Vec::with_capacity(n);
    let mut first_err = None;
    while let Some(r) = set.join_next().await {
        match r {
            Ok((i, Ok(t))) => out.push((i, t)),
            Ok((_, Err(e))) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(err!("task failed: {e}"));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, t)| t).collect())
}

/// A directory of its own under the export root for one run of one mode.
pub struct WorkDir {
    /// Its name in the root.
    pub name: String,
    /// Its handle.
    pub fh: Bytes,
}

impl WorkDir {
    /// Makes `rnfs-bench.<mode>.<pid>.<time>` in the export root.
    pub async fn make(s: &Session, c: &Conn, mode: &str) -> Result<WorkDir> {
        let name = format!(
            "rnfs-bench.{mode}.{}.{}",
            std::process::id(),
            crate::stats::unix_now()
        );
        let fh = c
            .mkdir(&s.root, &name)
            .await
            .map_err(|e| err!("cannot make the work directory {name} in the export: {e}"))?;
        Ok(WorkDir { name, fh })
    }

    /// Removes everything in the directory (one level) and the directory itself.
    pub async fn remove(self, s: &Session, c: &Conn) -> Result<()> {
        let (names, _) = c.readdir(&self.fh).await?;
        for n in names {
            let n = String::from_utf8_lossy(&n).into_owned();
            if c.remove(&self.fh, &n).await.is_err() {
                // A subdirectory: empty it first.
                let sub = c.lookup(&self.fh, &n).await?;
                let (inner, _) = c.readdir(&sub).await?;
                for m in inner {
                    c.remove(&sub, &String::from_utf8_lossy(&m)).await?;
                }
                c.rmdir(&self.fh, &n).await?;
            }
        }
        c.rmdir(&s.root, &self.name).await
    }
}

/// Writes `size` bytes of `f` sequentially in `bs` chunks with `depth` WRITEs in flight,
/// then COMMITs when `stable` is 0 (unstable). Returns the elapsed time (COMMIT included).
#[allow(clippy::too_many_arguments)]
pub async fn seq_write(
    c: &Arc<Conn>,
    f: &File,
    size: u64,
    bs: u32,
    depth: usize,
    stable: u32,
    data: &Bytes,
    prog: &Arc<Progress>,
) -> Result<Duration> {
    let next = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    par(depth, |_| {
        let (c, f, next, data, prog) = (
            c.clone(),
            f.clone(),
            next.clone(),
            data.clone(),
            prog.clone(),
        );
        async move {
            loop {
                let off = next.fetch_add(bs as u64, Ordering::Relaxed);
                if off >= size {
                    return Ok(());
                }
                let n = (size - off).min(bs as u64) as usize;
                c.write(&f, off, data.slice(..n), stable).await?;
                prog.add(n as u64);
            }
        }
    })
    .await?;
    if stable == 0 {
        c.commit(f).await?;
    }
    Ok(t0.elapsed())
}

/// What a sequential read pass saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadPass {
    /// Elapsed time.
    pub elapsed: Duration,
    /// Bytes returned as data.
    pub data: u64,
    /// Bytes described as holes (READ_PLUS).
    pub holes: u64,
    /// Reply bytes on the wire.
    pub wire: u64,
    /// Calls made.
    pub calls: u64,
}

/// Reads `size` bytes of `f` sequentially in `bs` chunks with `depth` calls in flight, with
/// READ or (when `plus`) READ_PLUS.
pub async fn seq_read(
    c: &Arc<Conn>,
    f: &File,
    size: u64,
    bs: u32,
    depth: usize,
    plus: bool,
    prog: &Arc<Progress>,
) -> Result<ReadPass> {
    let next = Arc::new(AtomicU64::new(0));
    let wire0 = c.rx_bytes();
    let t0 = Instant::now();
    let parts = par(depth, |_| {
        let (c, f, next, prog) = (c.clone(), f.clone(), next.clone(), prog.clone());
        async move {
            let mut p = ReadPass::default();
            loop {
                let off = next.fetch_add(bs as u64, Ordering::Relaxed);
                if off >= size {
                    return Ok(p);
                }
                let n = (size - off).min(bs as u64) as u32;
                let (data, holes, eof) = if plus {
                    c.read_plus(&f, off, n).await?
                } else {
                    let (d, eof) = c.read(&f, off, n).await?;
                    (d as u64, 0, eof)
                };
                if data + holes == 0 && !eof {
                    return Err(err!(
                        "{}: empty reply at offset {off} (count {n}) before end of file",
                        if plus { "READ_PLUS" } else { "READ" }
                    ));
                }
                p.data += data;
                p.holes += holes;
                p.calls += 1;
                prog.add(n as u64);
            }
        }
    })
    .await?;
    let mut total = ReadPass {
        elapsed: t0.elapsed(),
        ..Default::default()
    };
    for p in parts {
        total.data += p.data;
        total.holes += p.holes;
        total.calls += p.calls;
    }
    total.wire = c.rx_bytes() - wire0;
    Ok(total)
}

/// `statfs` f_type of tmpfs: its files are page-cache pages with no other copy to read back.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Checks that `dir` (the export's directory on this machine) can have its files dropped from
/// the page cache, i.e. that it is not on tmpfs.
pub fn check_evictable(dir: &Path) -> Result<()> {
    let st = rustix::fs::statfs(dir).map_err(|e| err!("--evict-dir {}: {e}", dir.display()))?;
    if st.f_type as i64 == TMPFS_MAGIC {
        return Err(err!(
            "--evict-dir {} is on tmpfs: its files live in the page cache and cannot be evicted",
            dir.display()
        ));
    }
    Ok(())
}

/// Drops `path` from this machine's page cache so that the next read of it goes to the disk
/// (the server's cache, when the server runs here). Written back first: dirty pages stay.
pub fn evict_local(path: &Path) -> Result<()> {
    let f = std::fs::File::open(path).map_err(|e| {
        err!(
            "cannot evict {}: {e} (is --evict-dir the export's directory on this machine?)",
            path.display()
        )
    })?;
    f.sync_all()?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| err!("posix_fadvise(DONTNEED) of {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last line util-linux's `tool` prints for `args` followed by `path`.
    fn util_linux(tool: &str, args: &[&str], path: &Path) -> String {
        let out = std::process::Command::new(tool)
            .args(args)
            .arg(path)
            .output()
            .unwrap_or_else(|e| panic!("{tool} (util-linux): {e}"));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().last().unwrap_or("").trim().to_string()
    }

    /// Resident bytes of `path` in the page cache, as fincore counts them.
    fn resident(path: &Path) -> u64 {
        util_linux(
            "fincore",
            &["--bytes", "--noheadings", "--output", "RES"],
            path,
        )
        .parse()
        .expect("fincore RES")
    }

    /// The type of the file system `path` is on: of file systems mounted over each other at
    /// one place (listed in mount order) the last, the one a path resolves to.
    fn fs_type(path: &Path) -> String {
        util_linux("findmnt", &["-n", "-o", "FSTYPE", "-T"], path)
    }

    #[test]
    fn an_evicted_file_leaves_the_page_cache_dirty_pages_included() {
        // the build's own directory: on the disk the sources are on
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target")
            .join(format!("rnfs-bench-evict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test dir");
        assert_eq!(
            check_evictable(&dir).is_ok(),
            fs_type(&dir) != "tmpfs",
            "check_evictable disagrees with findmnt"
        );
        if check_evictable(&dir).is_ok() {
            let f = dir.join("data");
            // written, not synced: the pages are dirty
            std::fs::write(&f, vec![7u8; 1 << 20]).expect("write test file");
            assert!(resident(&f) > 0, "a file just written is in the page cache");
            evict_local(&f).expect("evict");
            assert_eq!(resident(&f), 0, "pages left after eviction");
            assert_eq!(std::fs::read(&f).expect("read back"), vec![7u8; 1 << 20]);
        }
        assert!(evict_local(&dir.join("missing"))
            .unwrap_err()
            .0
            .contains("--evict-dir"));
        std::fs::remove_dir_all(&dir).expect("remove test dir");
    }

    #[test]
    fn tmpfs_cannot_be_evicted_from() {
        let shm = Path::new("/dev/shm");
        if fs_type(shm) == "tmpfs" {
            assert!(check_evictable(shm).unwrap_err().0.contains("tmpfs"));
        } else {
            assert!(check_evictable(shm).is_ok());
        }
    }
}
