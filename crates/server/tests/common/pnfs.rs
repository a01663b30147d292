//! pNFS on loopback: an MDS with two rnfsd data servers, and what a raw NFSv4.1 client needs
//! to act as the Linux flexfiles client does (LAYOUTGET, GETDEVICEINFO, NFSv3 I/O to the DS
//! as the layout's user, LAYOUTRETURN, answering CB_LAYOUTRECALL).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs4wire::{NfsArgop4 as A, NfsOpnum4 as Op, *};
use xdr::Decode;

use super::nfs4_raw::*;
use super::*;

/// An MDS and its data servers.
pub struct Cluster {
    pub dss: Vec<Fixture>,
    pub mds: Fixture,
}

/// Options of the DS exports: the MDS creates files there as root.
pub const DS_OPTIONS: &str = "rw,no_root_squash,insecure,sync";

impl Cluster {
    /// Two DSes; an MDS exporting with `options` and `mirrors` copies per file.
    pub fn new(options: &str, mirrors: u32, more: &[&str]) -> Cluster {
        let dss: Vec<Fixture> = (0..2)
            .map(|_| Fixture::with_options(0o700, DS_OPTIONS))
            .collect();
        let mut args: Vec<String> = Vec::new();
        for (i, d) in dss.iter().enumerate() {
            args.push("--pnfs-ds".into());
            args.push(format!(
                "ds{i}=127.0.0.1:{}:{}",
                d.server.port,
                d.export.display()
            ));
        }
        args.push("--pnfs-mirrors".into());
        args.push(mirrors.to_string());
        args.extend(more.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mds = Fixture::with_options_args(0o777, options, &args);
        Cluster { dss, mds }
    }

    /// The DS whose NFS service listens on `port`.
    pub fn ds_at(&self, port: u16) -> &Fixture {
        self.dss
            .iter()
            .find(|d| d.server.port == port)
            .unwrap_or_else(|| panic!("no DS at port {port}"))
    }

    /// The files in the DS export `i`.
    pub fn ds_files(&self, i: usize) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.dss[i].export)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    }
}

/// LAYOUTGET of the whole file with `sid` (the current stateid, as the Linux client sends it
/// in its OPEN COMPOUND).
pub fn layoutget(iomode: Layoutiomode4, sid: &Stateid4) -> A {
    A::OpLayoutget(Layoutget4args {
        loga_signal_layout_avail: false,
        loga_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
        loga_iomode: iomode,
        loga_offset: 0,
        loga_length: u64::MAX,
        loga_minlength: 4096,
        loga_stateid: sid.clone(),
        loga_maxcount: 4096,
    })
}

/// The current stateid of NFSv4.1.
pub fn current() -> Stateid4 {
    Stateid4 {
        seqid: 1,
        other: [0; 12],
    }
}

pub fn getdeviceinfo(id: &Deviceid4, maxcount: u32) -> A {
    A::OpGetdeviceinfo(Getdeviceinfo4args {
        gdia_device_id: *id,
        gdia_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
        gdia_maxcount: maxcount,
        gdia_notify_types: Vec::new(),
    })
}

pub fn layoutreturn_file(sid: &Stateid4) -> A {
    A::OpLayoutreturn(Layoutreturn4args {
        lora_reclaim: false,
        lora_layout_type: Layouttype4::LAYOUT4_FLEX_FILES,
        lora_iomode: Layoutiomode4::Layoutiomode4Any,
        lora_layoutreturn: Layoutreturn4::Layoutreturn4File(LayoutreturnFile4 {
            lrf_offset: 0,
            lrf_length: u64::MAX,
            lrf_stateid: sid.clone(),
            lrf_body: Bytes::new(),
        }),
    })
}

/// Creates `name` in `dir` for reading and writing (mode 0644, as the raw client's user).
pub fn create(c: &mut V4, dir: &[u8], name: &str) -> (Bytes, Stateid4) {
    c.open_ok(
        dir,
        name,
        "owner",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    )
}

/// The values of a GETATTR of fs_layout_types and layout_blksize.
pub fn layout_attrs(c: &mut V4, fh: &[u8]) -> (Vec<u32>, u32) {
    let r = c
        .call(
            Ops::new()
                .putfh(fh)
                .getattr(&[FATTR4_FS_LAYOUT_TYPES, FATTR4_LAYOUT_BLKSIZE]),
        )
        .ok("GETATTR");
    let f = &r.get(Op::OP_GETATTR).getattr().obj_attributes;
    assert_eq!(
        bits(&f.attrmask),
        vec![FATTR4_FS_LAYOUT_TYPES, FATTR4_LAYOUT_BLKSIZE]
    );
    let mut d = xdr::Decoder::new(f.attr_vals.clone());
    let types = d.array(8, 4, |d| d.u32()).unwrap();
    (types, d.u32().unwrap())
}

/// Waits until `f` holds, up to 10 s.
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{what}: not after 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn v3_read_all(port: u16, export: &Path, name: &str) -> Vec<u8> {
    let mut c = RpcClient::connect(port);
    let root = c.mnt_ok(export);
    let fh = c.lookup_ok(&root, name);
    c.read_all(&fh, 1 << 20)
}

/// Where a layout says to write: the DS's port, the file's handle there, the user and group.
pub fn ds_target(c: &mut V4, lg: &Layoutget4resok) -> (u16, nfs3wire::NfsFh3, u32, u32) {
    let ff = ff_layout_of(lg);
    let ds = &ff.ffl_mirrors[0].ffm_data_servers[0];
    let r = c
        .call(Ops::new().op(getdeviceinfo(&ds.ffds_deviceid, 4096)))
        .ok("GETDEVICEINFO");
    let addr = FfDeviceAddr4::decode(&mut xdr::Decoder::new(
        r.get(Op::OP_GETDEVICEINFO)
            .getdeviceinfo()
            .gdir_device_addr
            .da_addr_body
            .clone(),
    ))
    .unwrap();
    let uaddr = std::str::from_utf8(&addr.ffda_netaddrs[0].na_r_addr).unwrap();
    let id = |b: &Bytes| std::str::from_utf8(b).unwrap().parse::<u32>().unwrap();
    (
        sunrpc::uaddr::parse(uaddr).unwrap().port(),
        fh3(ds.ffds_fh_vers[0].clone()),
        id(&ds.ffds_user),
        id(&ds.ffds_group),
    )
}

/// An NFSv3 WRITE to a DS as `uid`:`gid`; its status.
pub fn ds_write(
    port: u16,
    fh: &nfs3wire::NfsFh3,
    uid: u32,
    gid: u32,
    data: &[u8],
) -> nfs3wire::Nfsstat3 {
    let mut c = RpcClient::connect(port).with_user(uid, gid);
    match c.write(
        fh,
        0,
        Bytes::copy_from_slice(data),
        nfs3wire::StableHow::FileSync,
    ) {
        nfs3wire::Write3res::Ok(_) => nfs3wire::Nfsstat3::NFS3_OK,
        nfs3wire::Write3res::Fail(s, _) => s,
    }
}

/// A client of the cluster's MDS (minor version `minor`) with a back channel, and the
/// export's root handle.
pub fn with_back_channel(cl: &Cluster, minor: u32, owner: &str) -> (V4, Bytes) {
    let mut c = V4::connect(cl.mds.server.port, minor, owner);
    c.establish_back_channel(8);
    let root = c.path_fh(&cl.mds.export);
    (c, root)
}

/// The next CB_COMPOUND on the client's back channel: its XID and the operation after
/// CB_SEQUENCE.
pub fn next_cb_op(a: &mut V4) -> (u32, NfsCbArgop4) {
    let (xid, rec) = a.next_callback();
    let (_, mut d) = sunrpc::msg::decode_call(rec).expect("an RPC call");
    let cb = CbCompound4args::decode(&mut d).expect("CB_COMPOUND");
    assert_eq!(cb.argarray.len(), 2, "{cb:?}");
    (xid, cb.argarray[1].clone())
}

/// The next CB_COMPOUND on the holder's back channel: its XID and CB_LAYOUTRECALL.
pub fn next_layoutrecall(a: &mut V4) -> (u32, CbLayoutrecall4args) {
    match next_cb_op(a) {
        (xid, NfsCbArgop4::OpCbLayoutrecall(r)) => (xid, r),
        (_, other) => panic!("not CB_LAYOUTRECALL: {other:?}"),
    }
}

/// Answers CB_COMPOUND `xid` (CB_SEQUENCE, CB_LAYOUTRECALL) with NFS4_OK.
pub fn answer_layoutrecall(a: &mut V4, xid: u32) {
    a.answer_callback(
        xid,
        NfsCbResop4::OpCbLayoutrecall(CbLayoutrecall4res {
            clorr_status: Nfsstat4::NFS4_OK,
        }),
    );
}

/// The flexible files layout a LAYOUTGET handed out.
pub fn ff_layout_of(lg: &Layoutget4resok) -> FfLayout4 {
    FfLayout4::decode(&mut xdr::Decoder::new(
        lg.logr_layout[0].lo_content.loc_body.clone(),
    ))
    .expect("an ff_layout4")
}

/// A LAYOUTGET of `fh` with `sid` that must succeed.
pub fn layoutget_ok(
    c: &mut V4,
    fh: &[u8],
    iomode: Layoutiomode4,
    sid: &Stateid4,
) -> Layoutget4resok {
    let r = c
        .call(Ops::new().putfh(fh).op(layoutget(iomode, sid)))
        .ok("LAYOUTGET");
    r.get(Op::OP_LAYOUTGET).layoutget().clone()
}

/// The number of mirrors in a RW layout of `fh` (LAYOUTGET with `sid`), then returned; 0
/// while none is handed out (LAYOUTUNAVAILABLE: the copies are being repaired).
pub fn mirror_count(c: &mut V4, fh: &[u8], sid: &Stateid4) -> usize {
    let r = c.call(
        Ops::new()
            .putfh(fh)
            .op(layoutget(Layoutiomode4::Layoutiomode4Rw, sid)),
    );
    if r.status == Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE {
        return 0;
    }
    let r = r.ok("LAYOUTGET");
    let lg = r.get(Op::OP_LAYOUTGET).layoutget().clone();
    c.call(Ops::new().putfh(fh).op(layoutreturn_file(&lg.logr_stateid)))
        .ok("LAYOUTRETURN");
    let ff = ff_layout_of(&lg);
    ff.ffl_mirrors.len()
}
