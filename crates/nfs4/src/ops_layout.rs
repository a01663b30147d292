//! pNFS operations for the flexible files layout (RFC 8881 sections 18.40-18.44, RFC 7862
//! sections 15.6-15.7, RFC 8435): LAYOUTGET hands a client a whole-file layout naming each
//! mirror's data server and file and the synthetic owner to write it as, GETDEVICEINFO the
//! data server's addresses, LAYOUTCOMMIT brings the size the client wrote there to the file
//! here, LAYOUTRETURN ends a client's layouts. Placement and devices come from
//! [`pnfs::Mds`]; the layout stateids live in the state with the opens they came from.

use std::sync::Arc;

use bytes::Bytes;
use nfs4wire::*;
use pnfs::{DeviceId, FileLayout, Mds};
use vfs::FileType;
use xdr::{Decode, Encode, Encoder};

use crate::compound::{Ctx, Nfs4, OpFail};
use crate::ops_file::file_key;
use crate::state::{FileKey, LayoutState, State, StateObj, Stateid};

/// CB_RECALL_ANY's type mask for flexible files layouts of both iomodes (RFC 8435's
/// ff_cb_recall_any_mask, the READ and RW bits).
const RCA4_FF_LAYOUT_READ_RW: u32 =
    (1 << RCA4_TYPE_MASK_FF_LAYOUT_MIN) | (1 << RCA4_TYPE_MASK_FF_LAYOUT_MAX);

/// How often clients may be asked to return layouts.
const RECALL_ANY_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Iomode bits of [`LayoutState::iomodes`].
fn iomode_bit(m: Layoutiomode4) -> u32 {
    match m {
        Layoutiomode4::Layoutiomode4Read => 1 << 1,
        Layoutiomode4::Layoutiomode4Rw => 1 << 2,
        Layoutiomode4::Layoutiomode4Any => (1 << 1) | (1 << 2),
    }
}

/// The body of a flexible files layout (ff_layout4) for `l`: one data server per mirror
/// (the Linux client takes no more), whole file, no striping; read-write layouts carry the DS
/// files' owner, read layouts another user of their group, which may read but not write
/// them (RFC 8435 section 2.2).
pub fn ff_layout(l: &FileLayout, rw: bool) -> FfLayout4 {
    let user = if rw { l.uid } else { l.uid.wrapping_add(1) };
    let n = l.mirrors.len() as u32;
    FfLayout4 {
        ffl_stripe_unit: 0,
        ffl_mirrors: l
            .mirrors
            .iter()
            .enumerate()
            .map(|(i, m)| FfMirror4 {
                ffm_data_servers: vec![FfDataServer4 {
                    ffds_deviceid: m.device.0,
                    // reads go to the most efficient mirror: the first placed
                    ffds_efficiency: n - i as u32,
                    // anonymous: an NFSv3 data server has no stateids
                    ffds_stateid: Stateid4 {
                        seqid: 0,
                        other: [0; 12],
                    },
                    ffds_fh_vers: vec![m.fh.clone()],
                    ffds_user: Bytes::from(user.to_string()),
                    ffds_group: Bytes::from(l.gid.to_string()),
                }],
            })
            .collect(),
        // LAYOUTCOMMIT wanted, I/O through the MDS allowed, reads through RW layouts allowed
        ffl_flags: 0,
        ffl_stats_collect_hint: 0,
    }
}

/// The device address of a data server (ff_device_addr4): RDMA first where it listens for
/// it, then TCP; NFSv3 with its I/O sizes, not tightly coupled (RFC 8435 section 4.1).
pub fn ff_device(info: &pnfs::DeviceInfo) -> FfDeviceAddr4 {
    let tcp = info.spec.addr;
    let mut netaddrs = Vec::new();
    if let Some(p) = info.spec.rdma_port {
        let a = std::net::SocketAddr::new(tcp.ip(), p);
        netaddrs.push(Netaddr4 {
            na_r_netid: Bytes::from(sunrpc::uaddr::netid("rdma", a)),
            na_r_addr: Bytes::from(sunrpc::uaddr::format(a)),
        });
    }
    netaddrs.push(Netaddr4 {
        na_r_netid: Bytes::from(sunrpc::uaddr::netid("tcp", tcp)),
        na_r_addr: Bytes::from(sunrpc::uaddr::format(tcp)),
    });
    FfDeviceAddr4 {
        ffda_netaddrs: netaddrs,
        ffda_versions: vec![FfDeviceVersions4 {
            ffdv_version: 3,
            ffdv_minorversion: 0,
            ffdv_rsize: info.sizes.rsize,
            ffdv_wsize: info.sizes.wsize,
            ffdv_tightly_coupled: false,
        }],
    }
}

/// Checks the stateid LAYOUTGET was given (an open, lock or delegation stateid of the caller
/// on this file, or its layout stateid) and returns the caller's layout stateid on the file,
/// if it has one.
fn layout_stateid(
    s: &State,
    sid: &Stateid,
    client: u64,
    file: FileKey,
    minor: u32,
) -> Result<Option<[u8; 12]>, OpFail> {
    let obj = s.check(sid, minor)?;
    if obj.client() != client || obj.file() != file {
        return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
    }
    if let StateObj::Layout(_) = obj {
        return Ok(Some(sid.other));
    }
    Ok(s.states
        .on_file(file)
        .find(|(_, o)| matches!(o, StateObj::Layout(l) if l.client == client))
        .map(|(k, _)| k))
}

fn encoded(v: &impl Encode) -> Bytes {
    let mut e = Encoder::new();
    v.encode(&mut e);
    e.finish().to_bytes()
}

impl Nfs4 {
    /// The data servers, or NOTSUPP on a server without them.
    fn mds(&self) -> Result<&Arc<Mds>, OpFail> {
        self.pnfs
            .as_ref()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_NOTSUPP))
    }

    pub(crate) fn layoutget(
        &self,
        ctx: &mut Ctx<'_>,
        a: Layoutget4args,
    ) -> Result<Layoutget4resok, OpFail> {
        let mds = self.mds()?;
        if a.loga_layout_type != Layouttype4::LAYOUT4_FLEX_FILES {
            return Err(Nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE.into());
        }
        let rw = match a.loga_iomode {
            Layoutiomode4::Layoutiomode4Read => false,
            Layoutiomode4::Layoutiomode4Rw => true,
            Layoutiomode4::Layoutiomode4Any => return Err(Nfsstat4::NFS4ERR_BADIOMODE.into()),
        };
        // RFC 8881 section 18.43.3: a range that is empty or runs past the largest offset
        let past_end = |len: u64| len != u64::MAX && a.loga_offset.checked_add(len).is_none();
        if a.loga_length == 0 || past_end(a.loga_length) || past_end(a.loga_minlength) {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        let (c, n) = self.real(ctx)?;
        match n.attr.ftype {
            FileType::Regular => {}
            FileType::Directory => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            _ => return Err(Nfsstat4::NFS4ERR_WRONG_TYPE.into()),
        }
        if !self.offers_layouts(&c) {
            return Err(Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE.into());
        }
        let want = vfs::access::READ | if rw { vfs::access::MODIFY } else { 0 };
        if self.vfs.access(&c, &n, want) & want != want {
            return Err(Nfsstat4::NFS4ERR_ACCESS.into());
        }
        let sid = self.stateid(ctx, a.loga_stateid)?;
        let client = ctx.clientid.ok_or(Nfsstat4::NFS4ERR_BAD_STATEID)?;
        let file = file_key(&n);
        // the stateid first, so that a bad one places nothing
        layout_stateid(&self.state.lock(), &sid, client, file, ctx.minor)?;
        // then the data servers, without the state lock
        let layout = match mds.layout(&n.fh) {
            Some(l) => l,
            // a file whose data is here stays here; an empty one is placed when written
            None if rw && n.attr.size == 0 => {
                mds.place(&n.fh)?;
                mds.layout(&n.fh)
                    .ok_or(Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE)?
            }
            None => return Err(Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE.into()),
        };
        if layout.mirrors.is_empty() {
            return Err(Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE.into());
        }
        let body = encoded(&ff_layout(&layout, rw));
        // stateid, return-on-close, one layout4 with its header: 16 + 4 + 4 + 28 + 4
        if body.len() + 64 > a.loga_maxcount as usize {
            return Err(Nfsstat4::NFS4ERR_TOOSMALL.into());
        }
        let mut s = self.state.lock();
        // a file whose copies are being repaired gets its writes through the MDS; checked
        // under the state lock, which the repair takes to see whether layouts are out
        if rw && mds.resyncing(&n.fh) {
            return Err(Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE.into());
        }
        let other = match layout_stateid(&s, &sid, client, file, ctx.minor)? {
            Some(other) => other,
            None => {
                let other = s.new_other();
                s.states.insert(
                    other,
                    StateObj::Layout(LayoutState {
                        client,
                        file,
                        fh: n.fh.clone(),
                        seqid: 0,
                        iomodes: 0,
                        recalled: None,
                        recall_sent: false,
                    }),
                );
                self.recall_any_over_bound(&mut s, mds.max_layouts());
                other
            }
        };
        let Some(StateObj::Layout(l)) = s.states.get_mut(&other) else {
            return Err(Nfsstat4::NFS4ERR_SERVERFAULT.into());
        };
        // RFC 8881 section 12.5.5.2: no new layout while the file's is being recalled
        if l.recalled.is_some() {
            return Err(Nfsstat4::NFS4ERR_RECALLCONFLICT.into());
        }
        l.seqid = l.seqid.wrapping_add(1).max(1);
        l.iomodes |= iomode_bit(a.loga_iomode);
        let seqid = l.seqid;
        drop(s);
        ctx.cur_sid = Some(Stateid { seqid, other });
        Ok(Layoutget4resok {
            logr_return_on_close: true,
            logr_stateid: Stateid { seqid, other }.into(),
            logr_layout: vec![Layout4 {
                lo_offset: 0,
                lo_length: u64::MAX,
                lo_iomode: a.loga_iomode,
                lo_content: LayoutContent4 {
                    loc_type: Layouttype4::LAYOUT4_FLEX_FILES,
                    loc_body: body,
                },
            }],
        })
    }

    /// More layout stateids than `max`: every client holding layouts is asked to return
    /// those it needs least, keeping its share of half the bound (CB_RECALL_ANY with the
    /// flexible files READ and RW bits; at most once a second). Layouts
    /// are still handed out meanwhile: the bound is on what the server keeps for long.
    fn recall_any_over_bound(&self, s: &mut State, max: usize) {
        let total = s.states.layouts();
        if total <= max {
            return;
        }
        {
            let mut at = self.recall_any_at.lock();
            if at.is_some_and(|t| t.elapsed() < RECALL_ANY_EVERY) {
                return;
            }
            *at = Some(std::time::Instant::now());
        }
        let mut held: std::collections::BTreeMap<u64, usize> = Default::default();
        for o in s.states.values() {
            if let StateObj::Layout(l) = o {
                *held.entry(l.client).or_default() += 1;
            }
        }
        for (client, n) in held {
            let keep = u32::try_from(n * (max / 2) / total).unwrap_or(u32::MAX);
            let any = NfsCbArgop4::OpCbRecallAny(CbRecallAny4args {
                craa_objects_to_keep: keep,
                craa_type_mask: vec![RCA4_FF_LAYOUT_READ_RW],
            });
            let sent = self.callback(s, client, vec![any]).is_some();
            tracing::debug!(client, held = n, keep, sent, "CB_RECALL_ANY");
            if sent {
                self.counters
                    .layout_recall_any
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn getdeviceinfo(
        &self,
        _ctx: &mut Ctx<'_>,
        a: Getdeviceinfo4args,
    ) -> Result<Getdeviceinfo4resok, OpFail> {
        let mds = self.mds()?;
        if a.gdia_layout_type != Layouttype4::LAYOUT4_FLEX_FILES {
            return Err(Nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE.into());
        }
        let info = mds
            .device(&DeviceId(a.gdia_device_id))
            .ok_or(Nfsstat4::NFS4ERR_NOENT)?;
        let body = encoded(&ff_device(&info));
        // RFC 8881 section 18.40.3: a maxcount of 0 asks for no address
        let body = if a.gdia_maxcount == 0 {
            Bytes::new()
        } else {
            // layout type, the body's length, the notification bitmap
            let need = body.len() + 16;
            if need > a.gdia_maxcount as usize {
                return Err(OpFail::with_body(
                    Nfsstat4::NFS4ERR_TOOSMALL,
                    &(need as u32),
                ));
            }
            body
        };
        Ok(Getdeviceinfo4resok {
            gdir_device_addr: DeviceAddr4 {
                da_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
                da_addr_body: body,
            },
            // no device notifications
            gdir_notification: Vec::new(),
        })
    }

    /// The caller's layout state named by `sid` on the current file, checked.
    fn held_layout(&self, ctx: &Ctx<'_>, sid: &Stateid, file: FileKey) -> Result<(), OpFail> {
        let s = self.state.lock();
        match s.check(sid, ctx.minor)? {
            StateObj::Layout(l) if Some(l.client) == ctx.clientid && l.file == file => Ok(()),
            StateObj::Layout(_) => Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
            _ => Err(Nfsstat4::NFS4ERR_BADLAYOUT.into()),
        }
    }

    pub(crate) fn layoutcommit(
        &self,
        ctx: &mut Ctx<'_>,
        a: Layoutcommit4args,
    ) -> Result<Layoutcommit4resok, OpFail> {
        let mds = self.mds()?;
        let (_, n) = self.real(ctx)?;
        let sid = self.stateid(ctx, a.loca_stateid)?;
        let file = file_key(&n);
        let earlier = self.state.lock().of_earlier_instance(&sid);
        if earlier {
            // A layout handed out before this server restarted, or by the head this identity
            // had before a takeover: the client wrote under it to the data servers and commits
            // now, after recovering its state. RFC 8881 12.7.4 has it set loca_reclaim in the
            // grace period; the Linux client never does, and commits whenever its RPC is
            // resent. Taken from a client that holds the file open for writing (the size it
            // reports is bounded by the copies: Mds::committed); from any other, knfsd's
            // NFS4ERR_BADLAYOUT, which the Linux client takes as nothing to commit.
            let client = ctx.clientid.ok_or(Nfsstat4::NFS4ERR_BADLAYOUT)?;
            if !self.state.lock().holds_open_for_write(client, file) {
                return Err(Nfsstat4::NFS4ERR_BADLAYOUT.into());
            }
        } else {
            self.held_layout(ctx, &sid, file)?;
        }
        if a.loca_reclaim && !self.state.lock().in_grace() {
            return Err(Nfsstat4::NFS4ERR_NO_GRACE.into());
        }
        let end = match a.loca_last_write_offset {
            Newoffset4::True(last) => Some(last.checked_add(1).ok_or(Nfsstat4::NFS4ERR_INVAL)?),
            Newoffset4::False => None,
        };
        let before = n.attr.size;
        let (end, data_time) = mds.committed(&n.fh, end);
        let attr = self.vfs.remote_written(&n, end, data_time)?;
        Ok(Layoutcommit4resok {
            locr_newsize: if attr.size != before {
                Newsize4::True(attr.size)
            } else {
                Newsize4::False
            },
        })
    }

    pub(crate) fn layoutreturn(
        &self,
        ctx: &mut Ctx<'_>,
        a: Layoutreturn4args,
    ) -> Result<LayoutreturnStateid, OpFail> {
        self.mds()?;
        if a.lora_layout_type != Layouttype4::LAYOUT4_FLEX_FILES {
            return Err(Nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE.into());
        }
        let client = ctx.clientid.ok_or(Nfsstat4::NFS4ERR_BAD_STATEID)?;
        if a.lora_reclaim {
            // layouts are not kept across a restart: nothing to reclaim
            return Err(if self.state.lock().in_grace() {
                Nfsstat4::NFS4ERR_BAD_STATEID
            } else {
                Nfsstat4::NFS4ERR_NO_GRACE
            }
            .into());
        }
        let bits = iomode_bit(a.lora_iomode);
        match a.lora_layoutreturn {
            Layoutreturn4::Layoutreturn4File(f) => {
                let (_, n) = self.real(ctx)?;
                let sid = self.stateid(ctx, f.lrf_stateid)?;
                self.record_return(&n.fh, &f.lrf_body);
                let mut s = self.state.lock();
                match s.check(&sid, ctx.minor)? {
                    StateObj::Layout(l) if l.client == client && l.file == file_key(&n) => {}
                    _ => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
                }
                let whole = f.lrf_offset == 0 && f.lrf_length == u64::MAX;
                let Some(StateObj::Layout(l)) = s.states.get_mut(&sid.other) else {
                    return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
                };
                // layouts are whole-file: a part returned leaves the layout held
                if whole {
                    l.iomodes &= !bits;
                }
                if l.iomodes == 0 {
                    s.states.remove(&sid.other);
                    return Ok(LayoutreturnStateid::False);
                }
                l.seqid = l.seqid.wrapping_add(1).max(1);
                Ok(LayoutreturnStateid::True(
                    Stateid {
                        seqid: l.seqid,
                        other: sid.other,
                    }
                    .into(),
                ))
            }
            // every layout of the client (on the current file system, for FSID: layouts are
            // only handed out on pNFS exports, so all of them)
            _ => {
                let mut s = self.state.lock();
                let mine: Vec<[u8; 12]> = s
                    .states
                    .of_client(client)
                    .filter(|(_, o)| matches!(o, StateObj::Layout(_)))
                    .map(|(k, _)| k)
                    .collect();
                for k in mine {
                    let Some(StateObj::Layout(l)) = s.states.get_mut(&k) else {
                        continue;
                    };
                    l.iomodes &= !bits;
                    if l.iomodes == 0 {
                        s.states.remove(&k);
                    }
                }
                Ok(LayoutreturnStateid::False)
            }
        }
    }

    /// Recalls the layouts other clients than `client` hold on file `n` before a change
    /// their writes to the data servers would undo (a truncation): Ok once none is left,
    /// DELAY while recalls are out. A holder that keeps its layout a lease past the recall is
    /// fenced: the DS files get new owners, so its writes there are refused, and its layout
    /// state is dropped (RFC 8435 section 2.2).
    pub(crate) fn recall_layouts(&self, client: u64, n: &vfs::Node) -> Result<(), OpFail> {
        let Some(mds) = &self.pnfs else {
            return Ok(());
        };
        let file = file_key(n);
        let mut fence = false;
        let mut waiting = false;
        {
            let mut s = self.state.lock();
            let held: Vec<[u8; 12]> = s
                .states
                .on_file(file)
                .filter(|(_, o)| matches!(o, StateObj::Layout(l) if l.client != client))
                .map(|(k, _)| k)
                .collect();
            if held.is_empty() {
                return Ok(());
            }
            // recalling waits: not on a thread that must not
            if vfs::nowait::active() {
                return Err(vfs::nowait::give_up().into());
            }
            let lease = s.lease();
            for other in held {
                let Some(StateObj::Layout(l)) = s.states.get_mut(&other) else {
                    continue;
                };
                match l.recalled {
                    Some(t) if t.elapsed() >= lease => {
                        tracing::warn!(client = l.client, "a layout not returned: fencing");
                        s.states.remove(&other);
                        fence = true;
                        continue;
                    }
                    Some(_) => {}
                    None => {
                        l.recalled = Some(std::time::Instant::now());
                        // the recall carries the next seqid (RFC 8881 section 12.5.3)
                        l.seqid = l.seqid.wrapping_add(1).max(1);
                    }
                }
                waiting = true;
                let Some(StateObj::Layout(l)) = s.states.get(&other).cloned() else {
                    continue;
                };
                if !l.recall_sent {
                    let recall = NfsCbArgop4::OpCbLayoutrecall(CbLayoutrecall4args {
                        clora_type: Layouttype4::LAYOUT4_FLEX_FILES,
                        clora_iomode: Layoutiomode4::Layoutiomode4Any,
                        clora_changed: true,
                        clora_recall: Layoutrecall4::Layoutrecall4File(LayoutrecallFile4 {
                            lor_fh: l.fh.clone(),
                            lor_offset: 0,
                            lor_length: u64::MAX,
                            lor_stateid: Stateid {
                                seqid: l.seqid,
                                other,
                            }
                            .into(),
                        }),
                    });
                    let sent = self.callback(&mut s, l.client, vec![recall]).is_some();
                    tracing::debug!(client = l.client, sent, "CB_LAYOUTRECALL");
                    if sent {
                        self.counters
                            .layout_recalls
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    if let Some(StateObj::Layout(x)) = s.states.get_mut(&other) {
                        x.recall_sent = sent;
                    }
                }
            }
        }
        if fence {
            mds.fence(&n.fh)?;
        }
        if waiting {
            return Err(Nfsstat4::NFS4ERR_DELAY.into());
        }
        Ok(())
    }

    /// Records the I/O errors a client reports when returning a layout (ff_layoutreturn4).
    fn record_return(&self, fh: &[u8], body: &[u8]) {
        if body.is_empty() {
            return;
        }
        match FfLayoutreturn4::decode(&mut xdr::Decoder::new(Bytes::copy_from_slice(body))) {
            Ok(r) => {
                for e in r.fflr_ioerr_report.iter().flat_map(|x| &x.ffie_errors) {
                    self.data_server_error(fh, e);
                }
            }
            Err(_) => tracing::debug!("LAYOUTRETURN: a body that is not ff_layoutreturn4"),
        }
    }

    /// A client could not do I/O to a data server: when it was writing (a WRITE or COMMIT,
    /// or no connection at all), the copy there may miss data and is marked stale.
    fn data_server_error(&self, fh: &[u8], e: &DeviceError4) {
        let write = matches!(
            e.de_opnum,
            NfsOpnum4::OP_WRITE | NfsOpnum4::OP_COMMIT | NfsOpnum4::OP_ILLEGAL
        );
        let marked = write
            && self
                .pnfs
                .as_ref()
                .is_some_and(|m| m.report_error(fh, &DeviceId(e.de_deviceid)));
        tracing::warn!(
            device = %e.de_deviceid.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            status = e.de_status.0,
            op = e.de_opnum.0,
            stale = marked,
            "a client reports a data server error"
        );
    }

    pub(crate) fn layouterror(&self, ctx: &mut Ctx<'_>, a: Layouterror4args) -> Result<(), OpFail> {
        self.mds()?;
        let (_, n) = self.real(ctx)?;
        let sid = self.stateid(ctx, a.lea_stateid)?;
        self.held_layout(ctx, &sid, file_key(&n))?;
        for e in &a.lea_errors {
            self.data_server_error(&n.fh, e);
        }
        Ok(())
    }

    pub(crate) fn layoutstats(&self, ctx: &mut Ctx<'_>, a: Layoutstats4args) -> Result<(), OpFail> {
        self.mds()?;
        let (_, n) = self.real(ctx)?;
        let sid = self.stateid(ctx, a.lsa_stateid)?;
        self.held_layout(ctx, &sid, file_key(&n))?;
        tracing::trace!(
            read = a.lsa_read.ii_bytes,
            written = a.lsa_write.ii_bytes,
            "LAYOUTSTATS"
        );
        Ok(())
    }
}

/// The repair of stale copies asks whether read-write layouts of a file are out.
impl pnfs::mds::LayoutHolders for Nfs4 {
    fn rw_layouts_out(&self, fh: &[u8]) -> bool {
        let Ok(n) = self.vfs.resolve(fh) else {
            return false;
        };
        let rw = iomode_bit(Layoutiomode4::Layoutiomode4Rw);
        // asked from file-system calls (GETATTR of a pNFS file): should the caller hold the
        // state lock, waiting would never end; "maybe" costs a question to the data servers
        let Some(st) = self
            .state
            .try_lock_for(std::time::Duration::from_millis(20))
        else {
            return true;
        };
        let out = st
            .states
            .on_file(file_key(&n))
            .any(|(_, o)| matches!(o, StateObj::Layout(l) if l.iomodes & rw != 0));
        out
    }

    fn recall_all(&self, fh: &[u8]) -> bool {
        // a file that is gone has no layouts
        let Ok(n) = self.vfs.resolve(fh) else {
            return true;
        };
        // no client is u64::MAX: every holder is asked
        self.recall_layouts(u64::MAX, &n).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout as the Linux client's decoder reads it (ff_layout_alloc_lseg): stripe unit,
    /// mirror count, per mirror one data server with its device id, efficiency, stateid, one
    /// handle, user and group as decimal strings; then flags and the stats hint.
    #[test]
    fn ff_layout_word_by_word() {
        let l = FileLayout {
            mirrors: vec![
                pnfs::LayoutMirror {
                    device: DeviceId([7; 16]),
                    fh: Bytes::from_static(&[1, 2, 3, 4, 5]),
                },
                pnfs::LayoutMirror {
                    device: DeviceId([9; 16]),
                    fh: Bytes::from_static(&[6; 8]),
                },
            ],
            uid: 1_073_741_824,
            gid: 1_073_741_824,
        };
        let b = encoded(&ff_layout(&l, false));
        let mut d = xdr::Decoder::new(b);
        assert_eq!(d.u64().unwrap(), 0, "stripe unit");
        assert_eq!(d.u32().unwrap(), 2, "mirrors");
        for (dev, fh, eff) in [
            ([7u8; 16], &[1u8, 2, 3, 4, 5][..], 2),
            ([9; 16], &[6; 8][..], 1),
        ] {
            assert_eq!(d.u32().unwrap(), 1, "one data server per mirror");
            assert_eq!(&d.opaque_fixed(16).unwrap()[..], &dev);
            assert_eq!(d.u32().unwrap(), eff);
            assert_eq!(d.u32().unwrap(), 0, "stateid seqid");
            assert_eq!(&d.opaque_fixed(12).unwrap()[..], &[0; 12]);
            assert_eq!(d.u32().unwrap(), 1, "handles");
            assert_eq!(&d.opaque(128).unwrap()[..], fh);
            // a read layout: not the owner, in the group
            assert_eq!(&d.opaque(64).unwrap()[..], b"1073741825");
            assert_eq!(&d.opaque(64).unwrap()[..], b"1073741824");
        }
        assert_eq!(d.u32().unwrap(), 0, "flags");
        assert_eq!(d.u32().unwrap(), 0, "stats hint");
        assert_eq!(d.remaining(), 0);
        let rw = ff_layout(&l, true);
        assert_eq!(
            &rw.ffl_mirrors[0].ffm_data_servers[0].ffds_user[..],
            b"1073741824"
        );
    }

    /// The device: RDMA before TCP, NFSv3.0 with the DS's sizes, loosely coupled.
    #[test]
    fn ff_device_lists_rdma_first() {
        let info = pnfs::DeviceInfo {
            spec: "ds=192.0.2.5:2049:/d,rdma=20049".parse().unwrap(),
            sizes: pnfs::ds::IoSizes {
                rsize: 1 << 20,
                wsize: 1 << 20,
            },
        };
        let b = encoded(&ff_device(&info));
        let mut d = xdr::Decoder::new(b);
        assert_eq!(d.u32().unwrap(), 2, "netaddrs");
        assert_eq!(&d.opaque(16).unwrap()[..], b"rdma");
        assert_eq!(&d.opaque(64).unwrap()[..], b"192.0.2.5.78.81");
        assert_eq!(&d.opaque(16).unwrap()[..], b"tcp");
        assert_eq!(&d.opaque(64).unwrap()[..], b"192.0.2.5.8.1");
        assert_eq!(d.u32().unwrap(), 1, "versions");
        for want in [3, 0, 1 << 20, 1 << 20, 0] {
            assert_eq!(d.u32().unwrap(), want);
        }
        assert_eq!(d.remaining(), 0);
    }
}
