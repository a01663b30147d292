//! Building blocks the modes share: a work directory, parallel tasks, sequential transfers.

use std::future::Future;
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
