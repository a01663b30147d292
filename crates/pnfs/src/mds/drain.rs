//! Taking a data server out of service (`rnfsctl pnfs-drain NAME`). The DS is recorded as
//! drained in the map (so a restart goes on with it) and gets no new file. Every file with a
//! copy there gets a replacement on another DS: created stale, it is filled by the
//! resynchronisation (resync.rs) from an in-sync copy, the drained one included. Once a
//! file has its copies in sync elsewhere, its layouts are recalled (they name the drained
//! DS), and when none is out the drained copy leaves the row and its DS file is deleted.
//! Meanwhile layouts leave the drained copy out wherever another copy is in sync.

use bytes::Bytes;

use super::*;

/// Why a data server cannot be drained, or a copy not moved yet.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// No data server of that name is configured.
    #[error("no data server {0} is configured")]
    Unknown(String),
    /// Every other data server is drained too: the files would have nowhere to go.
    #[error("{0} is the last data server in service")]
    Last(String),
    /// The map could not record it.
    #[error("{0}")]
    Map(String),
    /// A data server refused or did not answer.
    #[error("{0}")]
    Ds(#[from] DsError),
    /// No data server in service can take another copy of the file.
    #[error("no data server in service can take a copy")]
    NoRoom,
}

fn map_err(e: crate::map::MapError) -> DrainError {
    DrainError::Map(e.to_string())
}

/// How a drain stands: a drained data server and the copies it still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draining {
    /// The data server's name.
    pub ds: String,
    /// Copies of files still on it.
    pub copies: usize,
}

impl Mds {
    /// Takes data server `name` out of service: no new files go there and its copies move to
    /// the others (see the module comment). Draining one already drained changes nothing.
    pub fn drain(&self, name: &str) -> Result<(), DrainError> {
        if self.ds(name).is_none() {
            return Err(DrainError::Unknown(name.to_string()));
        }
        let others = self
            .dss
            .iter()
            .filter(|d| d.spec().name != name && !self.map.is_drained(&d.spec().name))
            .count();
        if others == 0 {
            return Err(DrainError::Last(name.to_string()));
        }
        self.map.set_drained(name, true).map_err(map_err)?;
        tracing::info!(ds = name, "data server being taken out of service");
        Ok(())
    }

    /// The drained data servers and the copies each still holds.
    pub fn draining(&self) -> Vec<Draining> {
        self.map
            .drained()
            .into_iter()
            .map(|ds| Draining {
                copies: self.map.copies_on(&ds),
                ds,
            })
            .collect()
    }

    /// How many files have a copy on data server `name`.
    pub fn copies_on(&self, name: &str) -> usize {
        self.map.copies_on(name)
    }

    /// Whether data server `name` is being taken out of service.
    pub fn is_drained(&self, name: &str) -> bool {
        self.map.is_drained(name)
    }

    /// One round of moving copies off the drained data servers (the background thread, every
    /// [`RESYNC_PERIOD`]).
    pub fn drain_step(&self) {
        if self.map.drained().is_empty() {
            return;
        }
        for (fh, m) in self.map.all() {
            if m.state != MapState::Ready || !m.mirrors.iter().any(|x| self.is_drained(&x.ds)) {
                continue;
            }
            if let Err(e) = self.drain_file(&fh) {
                tracing::warn!("taking a copy off a drained data server: {e}");
            }
        }
    }

    /// Moves file `fh` one step off the drained data servers: a replacement copy placed, or
    /// once the copies elsewhere are in sync and no layout is out, the drained copies dropped.
    fn drain_file(&self, fh: &Bytes) -> Result<(), DrainError> {
        let kept = |x: &Mirror| !self.is_drained(&x.ds);
        // as many copies elsewhere as can be, each in service
        let in_service = self
            .dss
            .iter()
            .filter(|d| !self.is_drained(&d.spec().name))
            .count();
        let want = (self.cfg.mirrors as usize).min(in_service);
        let placed = |m: &Mapping| m.mirrors.iter().filter(|x| kept(x)).count();
        let ready =
            |m: &Mapping| placed(m) >= want && !m.mirrors.iter().any(|x| kept(x) && x.stale);
        {
            let _turn = self.placing(fh);
            let Some(m) = self.map.get(fh) else {
                return Ok(());
            };
            if placed(&m) < want {
                return self.add_replacement(fh, &m);
            }
            if !ready(&m) {
                // the replacement is being filled (resync.rs)
                return Ok(());
            }
        }
        // the layouts out name the drained copy (not under the placement turn: fencing a
        // holder that keeps its layout takes it)
        if !self.recall_all(fh) {
            return Ok(());
        }
        let _turn = self.placing(fh);
        let Some(m) = self.map.get(fh) else {
            return Ok(());
        };
        if !ready(&m) {
            return Ok(());
        }
        let mut row = (*m).clone();
        let (gone, stay): (Vec<Mirror>, Vec<Mirror>) =
            row.mirrors.into_iter().partition(|x| !kept(x));
        row.mirrors = stay;
        self.map.put(fh, row).map_err(map_err)?;
        for x in gone {
            if let Some(ds) = self.ds(&x.ds) {
                if let Err(e) = ds.remove(&m.name) {
                    // the reconciler deletes it later (no row names it)
                    tracing::warn!(ds = %x.ds, "deleting a drained copy: {e}");
                }
            }
            tracing::info!(ds = %x.ds, "copy moved off a drained data server");
        }
        Ok(())
    }

    /// Creates a copy of `fh` (row `m`) on a data server in service that holds none, stale
    /// until the resynchronisation fills it.
    fn add_replacement(&self, fh: &Bytes, m: &Mapping) -> Result<(), DrainError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let free = match self.cfg.placement {
            Placement::RoundRobin => vec![0; self.dss.len()],
            Placement::LeastUsed => self.free_space(),
        };
        let mut last = DrainError::NoRoom;
        for i in placement_order(start, &free) {
            let ds = &self.dss[i];
            let name = &ds.spec().name;
            if self.is_drained(name) || m.mirrors.iter().any(|x| &x.ds == name) {
                continue;
            }
            match ds.create(&m.name, m.uid, m.gid, 0o640) {
                Ok(NfsFh3 { data }) => {
                    let mut row = m.clone();
                    row.mirrors.push(Mirror {
                        ds: name.clone(),
                        fh: data,
                        stale: true,
                    });
                    self.map.put(fh, row).map_err(map_err)?;
                    tracing::info!(ds = %name, "replacement copy placed for a drained one");
                    return Ok(());
                }
                Err(e) => last = e.into(),
            }
        }
        Err(last)
    }
}
