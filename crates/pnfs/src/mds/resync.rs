//! Mirrors that fall behind and catch up. A copy that misses a change (a DS that failed a
//! write through the MDS, or one a client reports an I/O error for) is marked stale: layouts
//! and reads leave it out. Once its data server answers again, the background thread copies
//! the file from an in-sync copy onto it, chunk by chunk, and marks it in sync. While it
//! does, no read-write layout of the file is handed out (RFC 8435 section 8.3), so every
//! write goes through the MDS, which sends it to the copy being repaired too; a chunk is
//! copied under the file's I/O lock, so no write falls between its read and its write.

use std::sync::Weak;

use bytes::Bytes;
use nfs3wire::{NfsFh3, StableHow};

use super::*;

/// What the MDS asks of the NFSv4 state about a file's layouts.
pub trait LayoutHolders: Send + Sync {
    /// Whether any client holds a read-write layout of the file with handle `fh`.
    fn rw_layouts_out(&self, fh: &[u8]) -> bool;
    /// Recalls every layout of the file with handle `fh` (a holder that keeps one a lease
    /// past the recall is fenced); true when none is out.
    fn recall_all(&self, fh: &[u8]) -> bool;
}

/// Bytes copied per READ / WRITE pair.
const CHUNK: u32 = 1 << 20;

impl Mds {
    /// Tells the MDS who knows which layouts are out (the NFSv4 server, once built).
    pub fn set_layout_holders(&self, h: Weak<dyn LayoutHolders>) {
        *self.holders.lock() = Some(h);
    }

    /// Whether any client holds a read-write layout of `fh` (as the NFSv4 server says).
    pub(crate) fn rw_layouts_out(&self, fh: &[u8]) -> bool {
        let holders = self.holders.lock().as_ref().and_then(Weak::upgrade);
        holders.is_some_and(|h| h.rw_layouts_out(fh))
    }

    /// Recalls every layout of `fh`; true when none is out (or nobody hands layouts out).
    pub(crate) fn recall_all(&self, fh: &[u8]) -> bool {
        let holders = self.holders.lock().as_ref().and_then(Weak::upgrade);
        holders.is_none_or(|h| h.recall_all(fh))
    }

    /// Whether file `fh`'s copies are being resynchronised now (no read-write layout then).
    pub fn resyncing(&self, fh: &[u8]) -> bool {
        self.resyncing.lock().contains(fh)
    }

    /// A client reports that I/O to `device` for file `fh` failed (LAYOUTERROR, or the error
    /// reports of LAYOUTRETURN): a write there may be missing, so the copy on that device is
    /// stale, unless it is the only one in sync. Returns whether a copy was marked.
    pub fn report_error(&self, fh: &[u8], device: &DeviceId) -> bool {
        self.counters.client_errors.fetch_add(1, Ordering::Relaxed);
        let Some(m) = self.map.get(fh) else {
            return false;
        };
        let in_sync = m.mirrors.iter().filter(|x| !x.stale).count();
        let hit: Vec<String> = m
            .mirrors
            .iter()
            .filter(|x| !x.stale && DeviceId::of(&x.ds) == *device)
            .map(|x| x.ds.clone())
            .collect();
        if hit.is_empty() || in_sync <= hit.len() {
            return false;
        }
        self.mark_stale(fh, &hit).is_ok()
    }

    /// Resynchronises the stale copies of every file whose data server answers again.
    pub fn resync_stale(&self) {
        for (fh, m) in self.map.all() {
            if m.state != MapState::Ready || !m.mirrors.iter().any(|x| x.stale) {
                continue;
            }
            match self.resync_file(&fh) {
                Ok(true) => tracing::info!("stale copies resynchronised"),
                Ok(false) => {}
                Err(e) => tracing::warn!("resynchronising: {e}"),
            }
        }
    }

    /// Copies file `fh` onto its stale copies whose DS answers; Ok(false) when there was
    /// nothing to do now (no such copy, no in-sync copy answering, read-write layouts out).
    fn resync_file(&self, fh: &Bytes) -> Result<bool, DsError> {
        let Some(m) = self.map.get(fh) else {
            return Ok(false);
        };
        let up = |x: &Mirror| self.ds(&x.ds).is_some_and(|d| d.ping().is_ok());
        let targets: Vec<Mirror> = m
            .mirrors
            .iter()
            .filter(|x| x.stale && !x.fh.is_empty() && up(x))
            .cloned()
            .collect();
        let Some(source) = m.mirrors.iter().find(|x| !x.stale && up(x)).cloned() else {
            return Ok(false);
        };
        if targets.is_empty() {
            return Ok(false);
        }
        // from here writes include the targets; a layout handed out before must come back
        {
            let _io = self.io_locks[Self::stripe(fh)].write();
            self.resyncing.lock().insert(fh.clone());
        }
        let done = if self.rw_layouts_out(fh) {
            Ok(false)
        } else {
            self.copy_onto(fh, &source, &targets).map(|()| true)
        };
        if let Ok(true) = done {
            let _turn = self.placing(fh);
            if let Some(m) = self.map.get(fh) {
                let mut m = (*m).clone();
                for x in &mut m.mirrors {
                    if targets.iter().any(|t| t.ds == x.ds) {
                        x.stale = false;
                    }
                }
                match self.map.put(fh, m) {
                    Ok(_) => {
                        self.counters
                            .resyncs
                            .fetch_add(targets.len() as u64, Ordering::Relaxed);
                    }
                    Err(e) => tracing::error!("{e}"),
                }
            }
        }
        self.resyncing.lock().remove(fh);
        done
    }

    /// Copies the file from `source` onto `targets`, then gives them its size and makes the
    /// data durable (again if a target restarted meanwhile: its write verifier changed).
    fn copy_onto(&self, fh: &[u8], source: &Mirror, targets: &[Mirror]) -> Result<(), DsError> {
        let src = self.ds(&source.ds).ok_or(DsError::Garbage)?;
        let sfh = NfsFh3 {
            data: source.fh.clone(),
        };
        for _ in 0..3 {
            let mut verfs = Vec::new();
            let mut off = 0u64;
            let size = loop {
                let _io = self.io_locks[Self::stripe(fh)].write();
                let size = src.getattr(&sfh)?.size;
                if off >= size {
                    break size;
                }
                let (data, _) = src.read(&sfh, off, CHUNK)?;
                // a copy shorter than its size reads short: the rest is a hole
                let data = if data.is_empty() {
                    Bytes::from(vec![0u8; (size - off).min(u64::from(CHUNK)) as usize])
                } else {
                    data
                };
                for t in targets {
                    let ds = self.ds(&t.ds).ok_or(DsError::Garbage)?;
                    let tfh = NfsFh3 { data: t.fh.clone() };
                    let (_, verf) = ds.write(&tfh, off, data.clone(), StableHow::Unstable)?;
                    verfs.push((t.ds.clone(), verf));
                    self.counters()
                        .resync_bytes
                        .fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
                }
                off += data.len() as u64;
            };
            let mut again = false;
            for t in targets {
                let ds = self.ds(&t.ds).ok_or(DsError::Garbage)?;
                let tfh = NfsFh3 { data: t.fh.clone() };
                let _io = self.io_locks[Self::stripe(fh)].write();
                ds.truncate(&tfh, size)?;
                let verf = ds.commit(&tfh)?;
                again |= verfs.iter().any(|(n, v)| *n == t.ds && *v != verf);
            }
            if !again {
                return Ok(());
            }
        }
        Err(DsError::Nfs(nfs3wire::Nfsstat3::NFS3ERR_IO))
    }
}
