//! The metadata server's side of flexible files: its data servers, where each file's data is
//! placed (round-robin over the DSes, mirrors on distinct ones), the durable map of
//! placements, and I/O through the MDS for clients that do not go to the DSes themselves
//! (as [`vfs::RemoteData`]). Knows nothing of NFSv4: the layout operations ask it for a
//! file's placement and a device's addresses and encode them.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs3wire::{NfsFh3, Nfsstat3, StableHow};
use parking_lot::Mutex;
use vfs::{Stability, VfsError, VfsResult};

mod drain;
mod resync;

pub use drain::{DrainError, Draining};

pub use resync::LayoutHolders;

use crate::config::{DsSpec, Placement, PnfsConfig};
use crate::ds::{DataServer, DsError, IoSizes};
use crate::map::{FileMap, MapError, MapState, Mapping, Mirror};

/// A device id (RFC 8881 `deviceid4`): one per data server, derived from its name, so that it
/// stays the same across restarts of the MDS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId(pub [u8; 16]);

impl DeviceId {
    fn of(name: &str) -> DeviceId {
        let h = siphasher::sip128::SipHasher13::new_with_keys(0x726e_6673, 0x646576);
        let mut h = h;
        h.write(name.as_bytes());
        DeviceId(siphasher::sip128::Hasher128::finish128(&h).as_bytes())
    }
}

/// Why the MDS could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is refused.
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    /// The map cannot be opened.
    #[error("{0}")]
    Map(#[from] MapError),
}

/// One copy of a file as a layout hands it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutMirror {
    /// The data server's device.
    pub device: DeviceId,
    /// The file's handle there.
    pub fh: Bytes,
}

/// What a flexible files layout of a file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLayout {
    /// Copies in sync, in mirror order.
    pub mirrors: Vec<LayoutMirror>,
    /// Synthetic owner of the DS files.
    pub uid: u32,
    /// Synthetic group of the DS files.
    pub gid: u32,
}

/// A data server as GETDEVICEINFO describes it.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Its configuration (addresses).
    pub spec: DsSpec,
    /// Its largest READ and WRITE.
    pub sizes: IoSizes,
}

/// Whether a handle on the MDS still names a file (the reconciler asks).
pub type FileExists = Box<dyn Fn(&[u8]) -> bool + Send>;

/// How often stale copies whose data server answers again are resynchronised.
pub const RESYNC_PERIOD: Duration = Duration::from_secs(2);

/// How long the data servers' free space is taken as known (least-used placement).
const FREE_SPACE_AGE: Duration = Duration::from_secs(5);

/// The order in which the data servers are tried for a new file: by most space available
/// (`free`, one per DS; all equal for round-robin), ties in turn from `start`. Space within
/// 1/64 of the most any has counts as equal: DSes that fill alike take files in turn rather
/// than all going to whichever had a few bytes more when asked (and two DSes on one file
/// system do not race on its bytes).
fn placement_order(start: usize, free: &[u64]) -> Vec<usize> {
    let n = free.len();
    let mut order: Vec<usize> = (0..n).map(|i| (start + i) % n.max(1)).collect();
    let most = free.iter().copied().max().unwrap_or(0);
    let near = |i: usize| free[i] >= most - most / 64;
    // a stable sort keeps the round-robin order among equals
    order.sort_by_key(|i| match near(*i) {
        true => (false, std::cmp::Reverse(0)),
        false => (true, std::cmp::Reverse(free[*i])),
    });
    order
}

/// Stripes of the placement locks (one file places at a time per stripe).
const PLACE_STRIPES: usize = 64;

/// What the MDS did with its placements, for the metrics.
#[derive(Debug, Default)]
pub struct MdsCounters {
    /// Files fenced (their DS files given new owners).
    pub fences: AtomicU64,
    /// Copies marked stale.
    pub stale_marks: AtomicU64,
    /// Stale copies resynchronised.
    pub resyncs: AtomicU64,
    /// Bytes written onto stale copies while resynchronising them (progress of a repair).
    pub resync_bytes: AtomicU64,
    /// I/O errors clients reported for data servers.
    pub client_errors: AtomicU64,
}

/// The MDS's data servers and placements (see the module comment).
pub struct Mds {
    counters: MdsCounters,
    cfg: PnfsConfig,
    dss: Vec<DataServer>,
    by_name: HashMap<String, usize>,
    devices: HashMap<DeviceId, usize>,
    map: FileMap,
    next: AtomicUsize,
    placing: Box<[Mutex<()>]>,
    /// Released files for the background thread, once started ([`Mds::start`]).
    releases: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// Per stripe of files: I/O through the MDS holds it shared, a resynchronisation's copy
    /// of a chunk exclusively (so that no write to the file falls between its read and write).
    io_locks: Box<[parking_lot::RwLock<()>]>,
    /// Files whose stale copies are being resynchronised: their writes go to those too, and
    /// no read-write layout is handed out.
    resyncing: Mutex<std::collections::HashSet<Bytes>>,
    /// Who says whether read-write layouts of a file are out (the NFSv4 state).
    holders: Mutex<Option<std::sync::Weak<dyn LayoutHolders>>>,
    /// When the DSes' free space was last asked, and their answers (least-used placement).
    free: Mutex<(Option<Instant>, Vec<u64>)>,
}

/// A DS error as the file system reports it to NFS: an unreachable DS is "try again later".
fn vfs_error(e: &DsError) -> VfsError {
    match e {
        DsError::Rpc(_) => VfsError::Delay,
        DsError::Nfs(Nfsstat3::NFS3ERR_NOSPC) => VfsError::Errno(libc::ENOSPC),
        DsError::Nfs(Nfsstat3::NFS3ERR_DQUOT) => VfsError::Errno(libc::EDQUOT),
        DsError::Nfs(Nfsstat3::NFS3ERR_FBIG) => VfsError::Errno(libc::EFBIG),
        DsError::Nfs(Nfsstat3::NFS3ERR_JUKEBOX) => VfsError::Delay,
        _ => VfsError::Errno(libc::EIO),
    }
}

fn map_error(e: MapError) -> VfsError {
    tracing::error!("{e}");
    VfsError::Errno(libc::EIO)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Mds {
    /// The MDS of `cfg`, its map in `cluster` (the state store other heads share) or else in
    /// `state_dir`; DSes are reached on first use.
    pub fn open(
        cfg: PnfsConfig,
        state_dir: &Path,
        cluster: Option<Arc<dyn store::Store>>,
    ) -> Result<Mds, StartError> {
        cfg.validate()?;
        let map = match cluster {
            Some(s) => FileMap::on(s)?,
            None => FileMap::open(&state_dir.join("pnfs.redb"))?,
        };
        let dss: Vec<DataServer> = cfg
            .data_servers
            .iter()
            .map(|s| DataServer::new(s.clone(), Duration::from_secs(10)))
            .collect();
        let by_name = cfg
            .data_servers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        let devices = cfg
            .data_servers
            .iter()
            .enumerate()
            .map(|(i, s)| (DeviceId::of(&s.name), i))
            .collect();
        Ok(Mds {
            counters: MdsCounters::default(),
            cfg,
            dss,
            by_name,
            devices,
            map,
            next: AtomicUsize::new(0),
            placing: (0..PLACE_STRIPES).map(|_| Mutex::new(())).collect(),
            releases: Mutex::new(None),
            io_locks: (0..PLACE_STRIPES)
                .map(|_| parking_lot::RwLock::new(()))
                .collect(),
            resyncing: Mutex::new(std::collections::HashSet::new()),
            holders: Mutex::new(None),
            free: Mutex::new((None, Vec::new())),
        })
    }

    /// Starts the background thread: the DS files of released files are deleted there (a
    /// REMOVE does not wait for the data servers), the reconciler runs a second after start,
    /// then every `period`, and stale copies are resynchronised every [`RESYNC_PERIOD`].
    /// `exists` says whether a handle still names a file.
    pub fn start(self: &Arc<Self>, exists: FileExists, period: Duration) {
        let (tx, rx) = mpsc::channel::<Bytes>();
        *self.releases.lock() = Some(tx);
        let me = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("pnfs-reconcile".into())
            .spawn(move || {
                let mut next = Instant::now() + Duration::from_secs(1);
                let mut next_reconcile = next;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    let got = rx.recv_timeout(wait);
                    let Some(mds) = me.upgrade() else {
                        return;
                    };
                    match got {
                        Ok(fh) => mds.release(&fh),
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            if Instant::now() >= next_reconcile {
                                let n = mds.reconcile(&*exists);
                                if n > 0 {
                                    tracing::info!(removed = n, "pNFS reconcile");
                                }
                                next_reconcile = Instant::now() + period;
                            }
                            mds.resync_stale();
                            mds.drain_step();
                            next = (Instant::now() + RESYNC_PERIOD).min(next_reconcile);
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("pNFS background thread: {e}");
        }
    }

    /// The data servers, in configuration order.
    pub fn data_servers(&self) -> &[DataServer] {
        &self.dss
    }

    /// Layout stateids to keep before clients are asked to return some (CB_RECALL_ANY).
    pub fn max_layouts(&self) -> usize {
        self.cfg.max_layouts
    }

    /// Copies per file.
    pub fn mirrors(&self) -> u32 {
        self.cfg.mirrors
    }

    /// The device of `id`, with the DS's I/O sizes (asked of it the first time; a DS that
    /// cannot be asked now is described with the largest, which the client bounds by its own).
    pub fn device(&self, id: &DeviceId) -> Option<DeviceInfo> {
        let ds = &self.dss[*self.devices.get(id)?];
        let sizes = ds.io_sizes().unwrap_or_else(|e| {
            tracing::warn!(ds = %ds.spec().name, "I/O sizes: {e}");
            IoSizes {
                rsize: nfs3wire::NFS3_MAX_IO as u32,
                wsize: nfs3wire::NFS3_MAX_IO as u32,
            }
        });
        Some(DeviceInfo {
            spec: ds.spec().clone(),
            sizes,
        })
    }

    /// The layout of file `fh` when its data is on the DSes.
    pub fn layout(&self, fh: &[u8]) -> Option<FileLayout> {
        let m = self.map.get(fh)?;
        if m.state != MapState::Ready {
            return None;
        }
        // a drained DS's copy only while no other copy is in sync
        let elsewhere = m
            .mirrors
            .iter()
            .any(|x| !x.stale && !self.map.is_drained(&x.ds));
        Some(FileLayout {
            mirrors: m
                .mirrors
                .iter()
                .filter(|x| !(x.stale || elsewhere && self.map.is_drained(&x.ds)))
                .map(|x| LayoutMirror {
                    device: DeviceId::of(&x.ds),
                    fh: x.fh.clone(),
                })
                .collect(),
            uid: m.uid,
            gid: m.gid,
        })
    }

    /// The name of `fh`'s DS files: this MDS's id and a hash of the handle (a handle is
    /// longer than a name may be).
    fn ds_name(&self, fh: &[u8]) -> Bytes {
        let mut h = siphasher::sip128::SipHasher13::new_with_keys(0x6669_6c65, 0x6e616d65);
        h.write(fh);
        let hash = siphasher::sip128::Hasher128::finish128(&h).as_bytes();
        Bytes::from(format!("{:016x}.{}", self.map.instance(), hex(&hash)))
    }

    /// Whether `name` (a DS directory entry) is one of this MDS's files.
    pub fn owns_name(&self, name: &[u8]) -> bool {
        name.starts_with(format!("{:016x}.", self.map.instance()).as_bytes())
    }

    /// Places file `fh` on the DSes (see [`vfs::RemoteData::place`]): the row first, then a
    /// file on each mirror's DS, then the row marked ready. A file already placed is left as
    /// it is.
    pub fn place(&self, fh: &Bytes) -> Result<Arc<Mapping>, VfsError> {
        let _turn = self.placing(fh);
        if let Some(m) = self.map.get(fh) {
            if m.state == MapState::Ready {
                return Ok(m);
            }
        }
        let want = self.cfg.mirrors as usize;
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let order = match self.cfg.placement {
            Placement::RoundRobin => placement_order(start, &vec![0; self.dss.len()]),
            Placement::LeastUsed => placement_order(start, &self.free_space()),
        };
        let id = self.map.take_ids(&self.cfg.ids, 2).map_err(map_error)?;
        let name = self.ds_name(fh);
        let mut row = Mapping {
            state: MapState::Creating,
            name: name.clone(),
            uid: id,
            gid: id,
            mirrors: Vec::new(),
        };
        // candidates in round-robin order; a DS that cannot create is passed over
        let mut tried = Vec::new();
        for i in order {
            if row.mirrors.len() == want {
                break;
            }
            let ds = &self.dss[i];
            if self.map.is_drained(&ds.spec().name) {
                continue;
            }
            row.mirrors.push(Mirror {
                ds: ds.spec().name.clone(),
                fh: Bytes::new(),
                stale: false,
            });
            self.map.put(fh, row.clone()).map_err(map_error)?;
            match ds.create(&name, row.uid, row.gid, 0o640) {
                Ok(NfsFh3 { data }) => {
                    if let Some(m) = row.mirrors.last_mut() {
                        m.fh = data;
                    }
                }
                Err(e) => {
                    tracing::warn!(ds = %ds.spec().name, "placing a file: {e}");
                    row.mirrors.pop();
                    tried.push(e);
                }
            }
        }
        if row.mirrors.len() < want {
            self.roll_back(fh, &row);
            return Err(tried.first().map_or(VfsError::Delay, vfs_error));
        }
        row.state = MapState::Ready;
        self.map.put(fh, row).map_err(map_error)
    }

    /// Each DS's available bytes, asked at most every few seconds (0 for one that does not
    /// answer: it comes last).
    fn free_space(&self) -> Vec<u64> {
        let mut cache = self.free.lock();
        if !matches!(cache.0, Some(t) if t.elapsed() < FREE_SPACE_AGE) {
            let v = self
                .dss
                .iter()
                .map(|d| d.available().unwrap_or(0))
                .collect();
            *cache = (Some(Instant::now()), v);
        }
        cache.1.clone()
    }

    /// Removes what a placement that did not finish created, and its row.
    fn roll_back(&self, fh: &[u8], row: &Mapping) {
        for m in &row.mirrors {
            if let Some(ds) = self.ds(&m.ds) {
                let _ = ds.remove(&row.name);
            }
        }
        if let Err(e) = self.map.remove(fh) {
            tracing::error!("{e}");
        }
    }

    /// What the copies of `fh` say after a client wrote to them itself (LAYOUTCOMMIT): the
    /// end of the data the client reports written (`end`) bounded by the largest copy (a
    /// report that comes after a truncation must not grow the file again), and the latest
    /// modify time of the copies (when the data was last written). A DS that cannot be asked
    /// is taken at the client's word, with no time.
    pub fn committed(&self, fh: &[u8], end: Option<u64>) -> (Option<u64>, Option<vfs::Time>) {
        let Ok(copies) = self.copies(fh) else {
            return (end, None);
        };
        let mut found: Option<(u64, vfs::Time)> = None;
        for (ds, dfh) in &copies {
            match ds.getattr(dfh) {
                Ok(a) => {
                    let t = vfs::Time {
                        sec: i64::from(a.mtime.seconds),
                        nsec: a.mtime.nseconds,
                    };
                    let (s, m) = found.unwrap_or((0, t));
                    found = Some((s.max(a.size), m.max(t)));
                }
                Err(e) => tracing::warn!(ds = %ds.spec().name, "LAYOUTCOMMIT: {e}"),
            }
        }
        match found {
            Some((size, time)) => (end.map(|e| e.min(size)), Some(time)),
            None => (end, None),
        }
    }

    /// Fences file `fh`: its DS files get new synthetic owners (recorded first), so that I/O
    /// with the layouts handed out so far is refused by the DSes; clients get new layouts.
    pub fn fence(&self, fh: &[u8]) -> VfsResult<()> {
        let _turn = self.placing(fh);
        let Some(m) = self.map.get(fh) else {
            return Ok(());
        };
        let id = self.map.take_ids(&self.cfg.ids, 2).map_err(map_error)?;
        let mut m = (*m).clone();
        (m.uid, m.gid) = (id, id);
        self.map
            .put(&Bytes::copy_from_slice(fh), m)
            .map_err(map_error)?;
        drop(_turn);
        self.counters.fences.fetch_add(1, Ordering::Relaxed);
        self.each_copy(fh, "fence", |ds, dfh| ds.chown(dfh, id, id))
    }

    /// Applies a change to every in-sync copy of `fh`: it fails only when no copy took it;
    /// the copies that missed it are marked stale.
    fn each_copy(
        &self,
        fh: &[u8],
        what: &str,
        change: impl Fn(&DataServer, &NfsFh3) -> Result<(), DsError>,
    ) -> VfsResult<()> {
        let _io = self.io_locks[Self::stripe(fh)].read();
        let in_sync: Vec<String> = self
            .copies(fh)?
            .iter()
            .map(|(ds, _)| ds.spec().name.clone())
            .collect();
        let mut failed = Vec::new();
        let mut took = 0;
        let mut last = VfsError::Delay;
        for (ds, dfh) in &self.copies_to_change(fh)? {
            match change(ds, dfh) {
                Ok(()) if in_sync.contains(&ds.spec().name) => took += 1,
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!(ds = %ds.spec().name, "{what} through the MDS: {e}");
                    last = vfs_error(&e);
                    failed.push(ds.spec().name.clone());
                }
            }
        }
        if took == 0 {
            return Err(last);
        }
        if !failed.is_empty() {
            self.mark_stale(fh, &failed)?;
        }
        Ok(())
    }

    /// Marks the copies of `fh` on the data servers `names` stale (durable when this
    /// returns): they are left out of layouts and reads until resynchronised.
    fn mark_stale(&self, fh: &[u8], names: &[String]) -> VfsResult<()> {
        let _turn = self.placing(fh);
        let Some(m) = self.map.get(fh) else {
            return Ok(());
        };
        let mut m = (*m).clone();
        for x in &mut m.mirrors {
            if names.contains(&x.ds) {
                x.stale = true;
            }
        }
        self.map
            .put(&Bytes::copy_from_slice(fh), m)
            .map_err(map_error)?;
        self.counters
            .stale_marks
            .fetch_add(names.len() as u64, Ordering::Relaxed);
        tracing::warn!(ds = ?names, "copies marked stale");
        Ok(())
    }

    fn ds(&self, name: &str) -> Option<&DataServer> {
        self.by_name.get(name).map(|i| &self.dss[*i])
    }

    /// The in-sync copies of `fh`, with their DSes.
    fn copies(&self, fh: &[u8]) -> VfsResult<Vec<(&DataServer, NfsFh3)>> {
        self.copies_where(fh, |x| !x.stale)
    }

    /// The copies a change goes to: the in-sync ones, and while the file is resynchronised
    /// the stale ones too.
    fn copies_to_change(&self, fh: &[u8]) -> VfsResult<Vec<(&DataServer, NfsFh3)>> {
        let all = self.resyncing.lock().contains(fh);
        self.copies_where(fh, |x| all || !x.stale)
    }

    fn copies_where(
        &self,
        fh: &[u8],
        which: impl Fn(&Mirror) -> bool,
    ) -> VfsResult<Vec<(&DataServer, NfsFh3)>> {
        let m = self.map.get(fh).ok_or(VfsError::Stale)?;
        Ok(m.mirrors
            .iter()
            .filter(|x| which(x) && !x.fh.is_empty())
            .filter_map(|x| Some((self.ds(&x.ds)?, NfsFh3 { data: x.fh.clone() })))
            .collect())
    }

    /// Deletes file `fh`'s DS files and its row; a DS that cannot be reached keeps the row
    /// for the reconciler.
    pub fn release(&self, fh: &[u8]) {
        let Some(m) = self.map.get(fh) else {
            return;
        };
        let mut all = true;
        for x in &m.mirrors {
            if let Some(ds) = self.ds(&x.ds) {
                if let Err(e) = ds.remove(&m.name) {
                    tracing::warn!(ds = %x.ds, "removing a released file: {e}");
                    all = false;
                }
            }
        }
        if all {
            if let Err(e) = self.map.remove(fh) {
                tracing::error!("{e}");
            }
        }
    }

    /// The stripe of `fh` (its placement and I/O locks).
    fn stripe(fh: &[u8]) -> usize {
        let mut h = siphasher::sip::SipHasher13::new();
        h.write(fh);
        h.finish() as usize % PLACE_STRIPES
    }

    /// The placement lock of `fh`'s stripe.
    fn placing(&self, fh: &[u8]) -> parking_lot::MutexGuard<'_, ()> {
        self.placing[Self::stripe(fh)].lock()
    }

    /// Brings the DSes in line with the map: rows of files that no longer exist on the MDS
    /// (`exists` says) lose their DS files, placements left half done by a crash are rolled
    /// back, and files of this MDS on a DS that no row names are deleted. Returns how many DS
    /// files were removed.
    pub fn reconcile(&self, exists: &dyn Fn(&[u8]) -> bool) -> usize {
        let mut removed = 0;
        for (fh, m) in self.map.all() {
            if m.state == MapState::Ready && exists(&fh) {
                continue;
            }
            let _turn = self.placing(&fh);
            // a placement in progress holds the lock: what is found now is what it left
            let Some(m) = self.map.get(&fh) else {
                continue;
            };
            match m.state {
                MapState::Ready if exists(&fh) => continue,
                MapState::Ready => self.release(&fh),
                MapState::Creating => self.roll_back(&fh, &m),
            }
            if self.map.get(&fh).is_none() {
                removed += m.mirrors.len();
            }
        }
        for ds in &self.dss {
            // listed before the rows are read: a row is written before its DS file is
            // created, so every file listed that has a row is seen with it
            let names = match ds.list() {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(ds = %ds.spec().name, "reconcile: listing: {e}");
                    continue;
                }
            };
            let known: std::collections::HashSet<Bytes> = self
                .map
                .all()
                .into_iter()
                .filter(|(_, m)| m.mirrors.iter().any(|x| x.ds == ds.spec().name))
                .map(|(_, m)| m.name.clone())
                .collect();
            for name in names {
                if self.owns_name(&name) && !known.contains(&name) {
                    match ds.remove(&name) {
                        Ok(()) => removed += 1,
                        Err(e) => tracing::warn!(ds = %ds.spec().name, "reconcile: {e}"),
                    }
                }
            }
        }
        removed
    }

    /// Files placed on the DSes.
    pub fn placed_files(&self) -> usize {
        self.map.len()
    }

    /// Files with a stale copy.
    pub fn stale_files(&self) -> usize {
        self.map
            .all()
            .iter()
            .filter(|(_, m)| m.mirrors.iter().any(|x| x.stale))
            .count()
    }

    /// What the MDS did with its placements.
    pub fn counters(&self) -> &MdsCounters {
        &self.counters
    }
}

impl vfs::RemoteData for Mds {
    fn holds(&self, fh: &[u8]) -> bool {
        self.map.get(fh).is_some()
    }

    fn written_elsewhere(&self, fh: &[u8]) -> bool {
        self.rw_layouts_out(fh)
    }

    fn extent(&self, fh: &[u8]) -> (Option<u64>, Option<vfs::Time>) {
        // the end of the longest copy (what a client wrote there itself)
        self.committed(fh, Some(u64::MAX))
    }

    fn place(&self, fh: &Bytes) -> VfsResult<bool> {
        Mds::place(self, fh).map(|_| true)
    }

    fn read(&self, fh: &[u8], offset: u64, count: u32) -> VfsResult<Bytes> {
        let mut last = VfsError::Delay;
        // the first copy that answers
        for (ds, dfh) in self.copies(fh)? {
            let mut out = bytes::BytesMut::new();
            let mut at = offset;
            let end = offset + u64::from(count);
            let r = loop {
                let want = (end - at)
                    .min(u64::from(ds.io_sizes().map(|s| s.rsize).unwrap_or(65536)))
                    as u32;
                match ds.read(&dfh, at, want) {
                    Ok((data, eof)) => {
                        at += data.len() as u64;
                        let short = data.is_empty() || eof;
                        out.extend_from_slice(&data);
                        if short || at >= end {
                            break Ok(out.freeze());
                        }
                    }
                    Err(e) => break Err(e),
                }
            };
            match r {
                Ok(b) => return Ok(b),
                Err(e) => {
                    tracing::warn!(ds = %ds.spec().name, "read through the MDS: {e}");
                    last = vfs_error(&e);
                }
            }
        }
        Err(last)
    }

    fn write(
        &self,
        fh: &[u8],
        offset: u64,
        data: Bytes,
        _stable: Stability,
    ) -> VfsResult<Stability> {
        // every copy, stable: the MDS's write verifier does not change when a DS restarts,
        // so nothing it acknowledged may be waiting in a DS's memory
        self.each_copy(fh, "write", |ds, dfh| {
            ds.write(dfh, offset, data.clone(), StableHow::FileSync)
                .map(drop)
        })?;
        Ok(Stability::FileSync)
    }

    fn commit(&self, _fh: &[u8]) -> VfsResult<()> {
        // writes through the MDS are stable already
        Ok(())
    }

    fn truncate(&self, fh: &[u8], size: u64) -> VfsResult<()> {
        self.each_copy(fh, "truncate", |ds, dfh| ds.truncate(dfh, size))
    }

    fn released(&self, fh: &Bytes) {
        let queued = match &*self.releases.lock() {
            Some(tx) => tx.send(fh.clone()).is_ok(),
            None => false,
        };
        if !queued {
            self.release(fh);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_orders() {
        // round-robin: in turn from the start
        assert_eq!(placement_order(0, &[0, 0, 0]), vec![0, 1, 2]);
        assert_eq!(placement_order(4, &[0, 0, 0]), vec![1, 2, 0]);
        // least-used: the most space first, in turn among equals
        assert_eq!(placement_order(0, &[10, 30, 20]), vec![1, 2, 0]);
        assert_eq!(placement_order(1, &[30, 10, 30]), vec![2, 0, 1]);
        assert_eq!(placement_order(2, &[30, 10, 30]), vec![2, 0, 1]);
        assert_eq!(placement_order(3, &[30, 10, 30]), vec![0, 2, 1]);
        assert!(placement_order(0, &[]).is_empty());
        // within 1/64 of the most: equal
        let near = [64_000, 63_100, 50_000];
        assert_eq!(placement_order(0, &near), vec![0, 1, 2]);
        assert_eq!(placement_order(1, &near), vec![1, 0, 2]);
        assert_eq!(placement_order(0, &[64_000, 62_000, 50_000]), vec![0, 1, 2]);
        assert_eq!(placement_order(1, &[64_000, 62_000, 50_000]), vec![0, 1, 2]);
    }

    #[test]
    fn device_ids_are_stable_and_distinct() {
        assert_eq!(DeviceId::of("ds1"), DeviceId::of("ds1"));
        assert_ne!(DeviceId::of("ds1"), DeviceId::of("ds2"));
    }
}
