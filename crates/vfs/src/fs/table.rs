//! The export table: export roots opened at start or at a reload, and the table calls read.
//!
//! Calls read the table through an [`ArcSwap`] (no lock on the call path); a reload builds a
//! new table and swaps it in, so a call sees either the old exports or the new ones, never a
//! mix. [`Node`] and [`Caller`] name their export by slot: a slot keeps its export for as long as
//! that path is exported with that id (its rules may change), and a removed export leaves an
//! empty slot, never reused, so a call that resolved a handle before the reload gets STALE
//! rather than another export's root.

use super::*;

use arc_swap::ArcSwap;

use crate::acl::AclKind;
use crate::cache::{memory_file_system, unique_inode_numbers};

/// One export: its root, opened once, and its client rules.
pub(super) struct Export {
    pub(super) id: u32,
    pub(super) entry: ExportEntry,
    pub(super) root: OwnedFd,
    pub(super) root_fh: Bytes,
    pub(super) root_dev: u64,
    pub(super) root_ino: u64,
    /// The mount the export root is on: objects on another (a file system mounted inside
    /// the export) get no handle, which would be resolved against the export's.
    pub(super) mount_id: i32,
    /// Inode numbers name inodes here (see [`unique_inode_numbers`]): cached descriptors may
    /// be found by the numbers a directory listing gives.
    pub(super) by_inode: bool,
    /// How a READ that must not block reads, if it may be tried at all.
    pub(super) nowait_reads: NowaitReads,
    /// The file system splices file pages into pipes (until a splice says it does not).
    pub(super) splice_reads: AtomicBool,
    /// What clients did with it (kept while its rules change).
    pub(super) stats: Arc<ExportStats>,
    /// Its file system keeps POSIX ACLs (its root's are readable): ACLs are served for
    /// every object of the export, as knfsd decides per file system.
    pub(super) posix_acls: bool,
}

/// Per-export counters for metrics: calls admitted and data bytes moved.
#[derive(Debug, Default)]
pub(super) struct ExportStats {
    pub(super) calls: std::sync::atomic::AtomicU64,
    pub(super) read_bytes: std::sync::atomic::AtomicU64,
    pub(super) write_bytes: std::sync::atomic::AtomicU64,
}

/// What clients did with one export since it was exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportCounters {
    /// The exported directory.
    pub path: PathBuf,
    /// Calls admitted to it (each call on one of its handles).
    pub calls: u64,
    /// READ and READ_PLUS data bytes sent.
    pub read_bytes: u64,
    /// WRITE data bytes written.
    pub write_bytes: u64,
}

impl Export {
    /// A local file system (the kinds of [`unique_inode_numbers`]): `fstat` of an open
    /// descriptor reads the inode in memory, so calls that need no more may be tried without
    /// blocking ([`crate::nowait`]).
    pub(super) fn local(&self) -> bool {
        !matches!(self.nowait_reads, NowaitReads::Never)
    }

    /// Its files live in memory (tmpfs): reading or writing them waits for no device, and
    /// making a change durable does nothing.
    pub(super) fn in_memory(&self) -> bool {
        matches!(self.nowait_reads, NowaitReads::Memory)
    }

    /// Whether this export is the NFSv4 root (`fsid=0` or `fsid=root`, as knfsd).
    pub(super) fn v4_root(&self) -> bool {
        self.entry
            .clients
            .first()
            .and_then(|c| c.options.fsid.as_deref())
            .is_some_and(|f| f == "0" || f == "root")
    }

    /// With the `mountpoint` option: the path that must be a mount point, when it is not.
    fn unmounted(&self) -> Option<PathBuf> {
        let rule = self.entry.clients.iter().find(|c| c.options.mountpoint)?;
        let want = rule
            .options
            .mountpoint_path
            .clone()
            .unwrap_or_else(|| self.entry.path.clone());
        let mounted = std::fs::metadata(&want)
            .and_then(|m| {
                let parent = want.parent().unwrap_or(Path::new("/"));
                let p = std::fs::metadata(parent)?;
                use std::os::unix::fs::MetadataExt;
                // the root, or a different file system than its parent's (a bind mount of a
                // directory of the same file system is not told apart, as in nfs-utils)
                Ok(want == Path::new("/") || m.dev() != p.dev())
            })
            .unwrap_or(false);
        (!mounted).then_some(want)
    }

    /// Opens the root of `entry` (its path made canonical) with the handle key `key`.
    fn open(entry: ExportEntry, key: &HandleKey) -> std::io::Result<Export> {
        let path = std::fs::canonicalize(&entry.path).map_err(|e| {
            std::io::Error::new(e.kind(), format!("export {}: {e}", entry.path.display()))
        })?;
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::other("export path contains NUL"))?;
        let cwd = std::fs::File::open("/")?;
        let root = sys::openat(
            cwd.as_fd(),
            &cpath,
            // open_by_handle_at takes the mount from this descriptor; it refuses O_PATH ones.
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        )
        .map_err(|e| std::io::Error::new(e.kind(), format!("export {}: {e}", path.display())))?;
        let st = sys::fstat(root.as_fd())?;
        let (kh, mount_id) = sys::name_to_handle_at(root.as_fd(), c"", libc::AT_EMPTY_PATH)
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "export {}: file system cannot produce handles: {e}",
                        path.display()
                    ),
                )
            })?;
        let mut entry = entry;
        entry.path = path;
        let id = export_id(&entry);
        let root_fh = Bytes::from(key.seal(id, &kh));
        let f_type = sys::fstatfs_type(root.as_fd()).ok();
        let by_inode = f_type.is_some_and(unique_inode_numbers);
        let posix_acls = !matches!(
            sys::getxattr(&proc_path(root.as_raw_fd()), AclKind::Access.xattr_name(), 0),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP)
        );
        let nowait_reads = match f_type {
            Some(t) if memory_file_system(t) => NowaitReads::Memory,
            _ if by_inode => NowaitReads::Flag(AtomicBool::new(true)),
            _ => NowaitReads::Never,
        };
        Ok(Export {
            id,
            entry,
            root,
            root_fh,
            root_dev: st.st_dev,
            root_ino: st.st_ino,
            mount_id,
            by_inode,
            nowait_reads,
            splice_reads: AtomicBool::new(true),
            stats: Arc::default(),
            posix_acls,
        })
    }

    /// The same export root with other client rules (a reload that changed only those).
    fn with_rules(&self, entry: ExportEntry) -> std::io::Result<Export> {
        let nowait_reads = match &self.nowait_reads {
            NowaitReads::Memory => NowaitReads::Memory,
            NowaitReads::Flag(f) => NowaitReads::Flag(AtomicBool::new(f.load(Ordering::Relaxed))),
            NowaitReads::Never => NowaitReads::Never,
        };
        Ok(Export {
            id: self.id,
            entry: ExportEntry {
                path: self.entry.path.clone(),
                clients: entry.clients,
            },
            root: self.root.try_clone()?,
            root_fh: self.root_fh.clone(),
            root_dev: self.root_dev,
            root_ino: self.root_ino,
            mount_id: self.mount_id,
            by_inode: self.by_inode,
            nowait_reads,
            splice_reads: AtomicBool::new(self.splice_reads.load(Ordering::Relaxed)),
            stats: self.stats.clone(),
            posix_acls: self.posix_acls,
        })
    }
}

/// How the file system of an export serves reads that must not wait.
#[derive(Debug)]
pub(super) enum NowaitReads {
    /// Files live in memory (tmpfs): a plain read.
    Memory,
    /// `preadv2(RWF_NOWAIT)`, until the file system refuses it (then never again).
    Flag(AtomicBool),
    /// Not at all.
    Never,
}

/// The exports a call sees.
pub(super) struct ExportTable {
    /// Exports by slot; `None` where an export was removed by a reload.
    slots: Vec<Option<Arc<Export>>>,
    /// Addresses of host names used in client rules, resolved when the table was built.
    pub(super) host_names: HashMap<IpAddr, String>,
}

impl ExportTable {
    /// The export in `slot`: STALE once it was removed.
    pub(super) fn get(&self, slot: usize) -> VfsResult<&Export> {
        self.slots
            .get(slot)
            .and_then(Option::as_deref)
            .ok_or(VfsError::Stale)
    }

    /// The options of the first rule of the export in `slot` that matches `client`.
    pub(super) fn options_for(&self, slot: usize, client: &Client) -> VfsResult<&ExportOptions> {
        let name = self.host_names.get(&client.addr.to_canonical());
        self.get(slot)?
            .entry
            .options_for(client.addr, name.map(String::as_str))
            .ok_or(VfsError::ExportDenied)
    }

    /// The exports being served, with their slots.
    pub(super) fn live(&self) -> impl Iterator<Item = (usize, &Export)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i, e.as_deref()?)))
    }

    /// The slot of the export whose handles carry `id`.
    pub(super) fn slot_of(&self, id: u32) -> VfsResult<usize> {
        self.live()
            .find(|(_, e)| e.id == id)
            .map(|(i, _)| i)
            .ok_or(VfsError::Stale)
    }

    /// Opens the roots of `entries` into a new table. An export already in `old` with the same
    /// path and id keeps its slot and its open root (its rules are replaced); removed exports
    /// leave empty slots. Errors name the export and leave `old` as it was.
    pub(super) fn build(
        entries: Vec<ExportEntry>,
        old: Option<&ExportTable>,
        key: &HandleKey,
    ) -> std::io::Result<(ExportTable, ExportChanges)> {
        let mut slots: Vec<Option<Arc<Export>>> = old.map_or_else(Vec::new, |t| t.slots.clone());
        let mut kept = vec![false; slots.len()];
        let mut changes = ExportChanges::default();
        let mut seen: Vec<(u32, PathBuf)> = Vec::new();
        for entry in entries {
            let fresh = Export::open(entry, key)?;
            if let Some((_, path)) = seen.iter().find(|(id, _)| *id == fresh.id) {
                return Err(std::io::Error::other(format!(
                    "exports {} and {} have the same id {}; give one an fsid=",
                    path.display(),
                    fresh.entry.path.display(),
                    fresh.id
                )));
            }
            seen.push((fresh.id, fresh.entry.path.clone()));
            if let Some(want) = fresh.unmounted() {
                // as nfs-utils: not exported until something is mounted there (a reload then
                // exports it), so that clients never write into the directory below
                tracing::warn!(export = %fresh.entry.path.display(), mountpoint = %want.display(),
                    "not exported: `mountpoint` is set and nothing is mounted there");
                continue;
            }
            let same = slots.iter().position(|s| {
                s.as_ref().is_some_and(|e| {
                    e.id == fresh.id
                        && e.entry.path == fresh.entry.path
                        && e.root_dev == fresh.root_dev
                        && e.root_ino == fresh.root_ino
                })
            });
            match same {
                Some(i) => {
                    kept[i] = true;
                    let Some(cur) = slots[i].clone() else {
                        continue;
                    };
                    if cur.entry.clients != fresh.entry.clients {
                        changes.changed.push(fresh.entry.path.clone());
                        slots[i] = Some(Arc::new(cur.with_rules(fresh.entry)?));
                    }
                }
                None => {
                    if old.is_some() {
                        changes.added.push(fresh.entry.path.clone());
                    }
                    slots.push(Some(Arc::new(fresh)));
                    kept.push(true);
                }
            }
        }
        for (slot, kept) in slots.iter_mut().zip(&kept) {
            if !kept {
                if let Some(e) = slot.take() {
                    changes.removed.push((e.entry.path.clone(), e.id));
                }
            }
        }
        let host_names = resolve_host_rules(slots.iter().flatten().map(|e| &e.entry));
        Ok((ExportTable { slots, host_names }, changes))
    }
}

/// What a reload changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExportChanges {
    /// Paths newly exported.
    pub added: Vec<PathBuf>,
    /// Paths no longer exported, with the id their handles carried (now STALE).
    pub removed: Vec<(PathBuf, u32)>,
    /// Paths whose client rules changed (applied from the next call).
    pub changed: Vec<PathBuf>,
}

/// One export as [`Vfs::exports`] describes it.
#[derive(Debug, Clone)]
pub struct ExportView {
    /// The exported directory.
    pub path: PathBuf,
    /// The id its handles carry.
    pub id: u32,
    /// Its root handle.
    pub root_fh: Bytes,
    /// Whether it is the NFSv4 root (`fsid=0` / `fsid=root`).
    pub v4_root: bool,
    /// Its client rules, in order.
    pub rules: Vec<crate::exports::ClientRule>,
}

/// The id handles of export `e` carry: `fsid=N` (`fsid=root` is 0, as in knfsd), else a hash
/// of the `fsid=` UUID or of the path (stable across restarts, so handles stay valid).
fn export_id(e: &ExportEntry) -> u32 {
    let fsid = e.clients.first().and_then(|c| c.options.fsid.as_deref());
    if fsid == Some("root") {
        return 0;
    }
    if let Some(n) = fsid.and_then(|f| f.parse::<u32>().ok()) {
        return n;
    }
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x726e6673, 0x6578706f);
    match fsid {
        Some(uuid) => h.write(uuid.as_bytes()),
        None => h.write(e.path.as_os_str().as_encoded_bytes()),
    }
    h.finish() as u32
}

/// Resolves the host names of client rules (forward lookup when the table is built). Wildcard
/// host patterns would need a reverse lookup of every client, which rnfsd does not do: they
/// never match.
fn resolve_host_rules<'a>(
    entries: impl Iterator<Item = &'a ExportEntry>,
) -> HashMap<IpAddr, String> {
    use crate::exports::ClientMatch;
    use std::net::ToSocketAddrs;
    let mut out = HashMap::new();
    for e in entries {
        for rule in &e.clients {
            match &rule.client {
                ClientMatch::Host(name) => match (name.as_str(), 0u16).to_socket_addrs() {
                    Ok(addrs) => {
                        for a in addrs {
                            out.entry(a.ip().to_canonical())
                                .or_insert_with(|| name.clone());
                        }
                    }
                    Err(err) => {
                        tracing::warn!(host = %name, error = %err, "exports: host name does not resolve")
                    }
                },
                ClientMatch::HostPattern(p) => tracing::warn!(
                    pattern = %p,
                    "exports: wildcard host names need reverse DNS, which rnfsd does not do; this rule never matches"
                ),
                ClientMatch::Netgroup(g) => {
                    tracing::warn!(netgroup = %g, "exports: netgroups are not supported; this rule never matches")
                }
                _ => {}
            }
        }
    }
    out
}

/// The shared, swappable table.
pub(super) type Table = ArcSwap<ExportTable>;

/// A new shared table.
pub(super) fn shared(t: ExportTable) -> Table {
    ArcSwap::from_pointee(t)
}

impl Vfs {
    /// The exports as the next call sees them.
    pub(super) fn table(&self) -> arc_swap::Guard<Arc<ExportTable>> {
        self.exports.load()
    }

    /// Replaces the exports with `entries` (a reload): new exports are served from the next
    /// call, removed ones answer their handles with STALE, changed rules apply from the next
    /// call. On an error (a path that cannot be exported, two exports with one id) nothing
    /// changes.
    pub fn reload(&self, entries: Vec<ExportEntry>) -> std::io::Result<ExportChanges> {
        // One reload at a time: two would each build from the same old table.
        let _one = self.reloading.lock();
        let old = self.table();
        let (table, changes) = ExportTable::build(entries, Some(&old), &self.key)?;
        drop(old);
        self.exports.store(Arc::new(table));
        for (_, id) in &changes.removed {
            // their descriptors would keep the removed exports' files open
            self.paths.remove_export(*id);
            self.data.remove_export(*id);
        }
        Ok(changes)
    }

    /// Makes everything written to the exported file systems durable (syncfs of each), as a
    /// stop does: data clients wrote unstable and have not committed yet is not lost with the
    /// process, even for a client that goes away before it could send it again.
    pub fn sync_all(&self) -> Vec<(PathBuf, std::io::Error)> {
        let t = self.table();
        let mut failed = Vec::new();
        let mut done: Vec<u64> = Vec::new();
        for (_, e) in t.live() {
            if done.contains(&e.root_dev) {
                continue;
            }
            done.push(e.root_dev);
            if let Err(err) = sys::syncfs(e.root.as_fd()) {
                failed.push((e.entry.path.clone(), err));
            }
        }
        failed
    }

    /// Each export's counters, in configuration order.
    pub fn export_counters(&self) -> Vec<ExportCounters> {
        self.table()
            .live()
            .map(|(_, e)| ExportCounters {
                path: e.entry.path.clone(),
                calls: e.stats.calls.load(Ordering::Relaxed),
                read_bytes: e.stats.read_bytes.load(Ordering::Relaxed),
                write_bytes: e.stats.write_bytes.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Counts `bytes` of data moved on `node`'s export.
    pub(super) fn count_io(&self, node: &Node, bytes: usize, write: bool) {
        if let Ok(e) = self.table().get(node.export) {
            let c = match write {
                true => &e.stats.write_bytes,
                false => &e.stats.read_bytes,
            };
            c.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    }

    /// The exports being served, in configuration order.
    pub fn exports(&self) -> Vec<ExportView> {
        self.table()
            .live()
            .map(|(_, e)| ExportView {
                path: e.entry.path.clone(),
                id: e.id,
                root_fh: e.root_fh.clone(),
                v4_root: e.v4_root(),
                rules: e.entry.clients.clone(),
            })
            .collect()
    }

    /// Export paths with the client specifications allowed to mount them.
    pub fn export_list(&self) -> Vec<(PathBuf, Vec<String>)> {
        self.exports()
            .into_iter()
            .map(|e| {
                let clients = e.rules.iter().map(|c| c.client.to_string()).collect();
                (e.path, clients)
            })
            .collect()
    }

    /// The path of the export `node` belongs to (None once it is no longer exported).
    pub fn export_path(&self, node: &Node) -> Option<PathBuf> {
        Some(self.table().get(node.export).ok()?.entry.path.clone())
    }
}
