//! The `pnfs` mode: file data over flexible-files layouts (RFC 8435), NFSv3 to the data
//! servers, as the Linux client's flexfiles driver does it.

use std::collections::HashMap;
use std::net::SocketAddr;

use nfs4wire as w;

use super::*;
use crate::client::open4;
use crate::rpc::{Cred, Via};
use crate::v3::V3;
use crate::v4::{Layout, V4};

/// Arguments of `pnfs`.
#[derive(Args, Debug)]
pub struct PnfsArgs {
    #[command(flatten)]
    pub common: Common,
    /// Files, each written then read by its own worker through its layout (placement spreads
    /// them over the data servers).
    #[arg(long, default_value_t = 4)]
    pub files: usize,
    /// Size of each file.
    #[arg(long, default_value = "64m", value_parser = parse_size)]
    pub file_size: u64,
    /// Record size of the data servers' READs and WRITEs (at most what each takes, as its
    /// device address says).
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    pub bs: u64,
    /// Calls in flight per file and data server.
    #[arg(long, default_value_t = 4)]
    pub iodepth: usize,
    /// LAYOUTGET + LAYOUTRETURN pairs timed after the data phases (what the metadata server
    /// sustains); 0: none.
    #[arg(long, default_value_t = 2000)]
    pub layoutgets: u64,
    /// Transport to the data servers: tcp, or rdma where their device addresses name one
    /// (--transport is that of the metadata server).
    #[arg(long, default_value = "tcp", value_parser = Via::parse)]
    pub ds_transport: Via,
}

/// One copy of a file on a data server, as a layout names it.
struct Copy {
    /// The data server's NFS address and the transport used.
    at: (SocketAddr, Via),
    /// Its largest READ and WRITE.
    rsize: u32,
    wsize: u32,
    /// The NFSv3 connection to it with the layout's synthetic credentials.
    conn: Arc<Conn>,
    /// The copy's NFSv3 handle.
    file: File,
}

/// A data server as its device address names it: where, over what, and the largest READ and
/// WRITE it takes.
#[derive(Debug, Clone, Copy)]
struct Device {
    addr: SocketAddr,
    via: Via,
    rsize: u32,
    wsize: u32,
}

/// What the workers share: the MDS connection, device addresses already asked for, and the
/// bytes each data server moved.
struct Shared {
    mds: Arc<Conn>,
    via: Via,
    timeout: Duration,
    devices: Mutex<HashMap<w::Deviceid4, Device>>,
    /// Bytes written and read by data server and transport.
    per_ds: Mutex<HashMap<(SocketAddr, Via), (u64, u64)>>,
}

fn v4(c: &Conn) -> Result<&V4> {
    match c {
        Conn::V4(v) => Ok(v),
        Conn::V3(_) => Err(err!("pnfs needs NFSv4.1 or 4.2 (--proto v4.1)")),
    }
}

impl Shared {
    /// Data server `id` (asked for once), reached over this run's transport, or TCP where its
    /// device address names no address of this run's.
    async fn device(&self, id: &w::Deviceid4) -> Result<Device> {
        if let Some(d) = self.devices.lock().get(id) {
            return Ok(*d);
        }
        let dev = v4(&self.mds)?.getdeviceinfo(id).await?;
        let v3 = dev
            .ffda_versions
            .iter()
            .find(|v| v.ffdv_version == 3)
            .ok_or_else(|| err!("a data server that does not speak NFSv3"))?;
        let find = |via: Via| {
            dev.ffda_netaddrs
                .iter()
                .filter(|n| n.na_r_netid.starts_with(via.name().as_bytes()))
                .find_map(|n| sunrpc::uaddr::parse(std::str::from_utf8(&n.na_r_addr).ok()?))
                .map(|a| (a, via))
        };
        let (addr, via) = find(self.via)
            .or_else(|| find(Via::Tcp))
            .ok_or_else(|| err!("a device address with no TCP address"))?;
        let d = Device {
            addr,
            via,
            rsize: v3.ffdv_rsize.clamp(4096, 1 << 20),
            wsize: v3.ffdv_wsize.clamp(4096, 1 << 20),
        };
        self.devices.lock().insert(*id, d);
        Ok(d)
    }

    /// The copies a layout names: every mirror's first data server.
    async fn copies(&self, l: &Layout) -> Result<Vec<Copy>> {
        let mut v = Vec::new();
        for m in &l.ff.ffl_mirrors {
            let ds = m
                .ffm_data_servers
                .first()
                .ok_or_else(|| err!("LAYOUTGET: a mirror without a data server"))?;
            let id = |b: &Bytes, what: &str| -> Result<u32> {
                std::str::from_utf8(b)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| err!("LAYOUTGET: {what} {b:?} is not a number"))
            };
            let cred = Cred {
                uid: id(&ds.ffds_user, "ffds_user")?,
                gid: id(&ds.ffds_group, "ffds_group")?,
                // the layout's ids are AUTH_SYS's (RFC 8435 section 2.2)
                krb5: None,
            };
            let fh = ds
                .ffds_fh_vers
                .first()
                .ok_or_else(|| err!("LAYOUTGET: a data server without a file handle"))?
                .clone();
            let d = self.device(&ds.ffds_deviceid).await?;
            // from a reserved port, as the kernel's client: data servers export `secure`
            let conn = V3::connect_from(d.addr, d.via, cred, self.timeout, true).await?;
            v.push(Copy {
                at: (d.addr, d.via),
                rsize: d.rsize,
                wsize: d.wsize,
                conn: Arc::new(Conn::V3(conn)),
                file: File {
                    fh,
                    sid: Default::default(),
                },
            });
        }
        if v.is_empty() {
            return Err(err!("LAYOUTGET: a layout without mirrors"));
        }
        Ok(v)
    }

    fn count(&self, at: (SocketAddr, Via), written: u64, read: u64) {
        let mut m = self.per_ds.lock();
        let e = m.entry(at).or_default();
        e.0 += written;
        e.1 += read;
    }
}

/// Writes then reads `files` files through flexible-files layouts, straight to and from the
/// data servers, then times LAYOUTGETs.
pub async fn pnfs(s: &Session, a: &PnfsArgs) -> Result<Outcome> {
    if a.bs == 0 || a.bs > 1 << 20 {
        return Err(err!("record size {} not in 1..=1m", a.bs));
    }
    let prog = Arc::new(Progress::start(a.common.quiet));
    let mds = Arc::new(s.connect("pnfs", a.files * 2 + 2).await?);
    v4(&mds)?;
    let sh = Arc::new(Shared {
        mds: mds.clone(),
        via: a.ds_transport,
        timeout: s.target.timeout,
        devices: Mutex::new(HashMap::new()),
        per_ds: Mutex::new(HashMap::new()),
    });
    let wd = WorkDir::make(s, &mds, "pnfs").await?;
    let data = pattern(a.bs as usize);
    let (size, bs, depth) = (a.file_size, a.bs as u32, a.iodepth);

    // write: OPEN, LAYOUTGET RW, every mirror written and committed, LAYOUTCOMMIT,
    // LAYOUTRETURN, CLOSE
    prog.phase("pnfs write", size * a.files as u64);
    let t0 = Instant::now();
    let mirrors = par(a.files, |i| {
        let (sh, dir, data, prog) = (sh.clone(), wd.fh.clone(), data.clone(), prog.clone());
        async move {
            let c = v4(&sh.mds)?;
            let f = sh.mds.create(&dir, &format!("f{i}")).await?;
            let l = c.layoutget(&open4(&f), true).await?;
            let copies = sh.copies(&l).await?;
            let n = copies.len();
            par(n, |m| {
                let (sh, data, prog) = (sh.clone(), data.clone(), prog.clone());
                let c = &copies[m];
                let (at, conn, file) = (c.at, c.conn.clone(), c.file.clone());
                let bs = bs.min(c.wsize);
                async move {
                    // every copy is written: progress counts the first
                    let shown = if m == 0 {
                        prog
                    } else {
                        Arc::new(Progress::start(true))
                    };
                    seq_write(&conn, &file, size, bs, depth, 0, &data, &shown).await?;
                    sh.count(at, size, 0);
                    Ok(())
                }
            })
            .await?;
            c.layoutcommit(&f.fh, &l.stateid, size).await?;
            c.layoutreturn(&f.fh, &l.stateid).await?;
            sh.mds.close(&f).await?;
            Ok(n)
        }
    })
    .await?;
    let wt = t0.elapsed();

    // read: OPEN, LAYOUTGET READ, one copy read (file i from mirror i mod n), LAYOUTRETURN,
    // CLOSE; the size the MDS reports is checked first
    prog.phase("pnfs read", size * a.files as u64);
    let t0 = Instant::now();
    par(a.files, |i| {
        let (sh, dir, prog) = (sh.clone(), wd.fh.clone(), prog.clone());
        async move {
            let c = v4(&sh.mds)?;
            let f = sh.mds.open(&dir, &format!("f{i}"), false).await?;
            let l = c.layoutget(&open4(&f), false).await?;
            let copies = sh.copies(&l).await?;
            let copy = &copies[i % copies.len()];
            let bs = bs.min(copy.rsize);
            let r = seq_read(&copy.conn, &copy.file, size, bs, depth, false, &prog).await?;
            if r.data != size {
                return Err(err!(
                    "file f{i}: {} bytes read from the data server {}, {size} written",
                    r.data,
                    copy.at.0
                ));
            }
            sh.count(copy.at, 0, r.data);
            c.layoutreturn(&f.fh, &l.stateid).await?;
            sh.mds.close(&f).await?;
            Ok(())
        }
    })
    .await?;
    let rt = t0.elapsed();

    // LAYOUTGET rate: every file open for reading, each worker a LAYOUTGET then a
    // LAYOUTRETURN in turn
    let mut lg_rate = None;
    if a.layoutgets > 0 {
        prog.phase("pnfs layoutget", a.layoutgets);
        let left = Arc::new(AtomicU64::new(a.layoutgets));
        let t0 = Instant::now();
        let lats = par(a.files, |i| {
            let (sh, dir, left, prog) = (sh.clone(), wd.fh.clone(), left.clone(), prog.clone());
            async move {
                let c = v4(&sh.mds)?;
                let f = sh.mds.open(&dir, &format!("f{i}"), false).await?;
                let mut lat = Lat::default();
                while left
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
                {
                    let t1 = Instant::now();
                    let l = c.layoutget(&open4(&f), false).await?;
                    lat.push(t1.elapsed());
                    c.layoutreturn(&f.fh, &l.stateid).await?;
                    prog.add(1);
                }
                sh.mds.close(&f).await?;
                Ok(lat)
            }
        })
        .await?;
        let el = t0.elapsed();
        let mut lat = Lat::default();
        for l in lats {
            lat.merge(l);
        }
        lg_rate = Some((a.layoutgets as f64 / el.as_secs_f64(), lat));
    }

    wd.remove(s, &mds).await?;
    mds.shutdown().await?;
    drop(prog);

    let total = size * a.files as u64;
    let (w_mb, r_mb) = (mb_s(total, wt), mb_s(total, rt));
    let mut md = header(s, "pnfs", &a.common);
    md.push_str(&format!(
        "{} files of {} ({} mirror(s) each), {} records, {} in flight per file and data \
         server, data over {}; MB/s counts each file's bytes once:\n\n",
        a.files,
        fmt_size(size),
        mirrors.iter().max().copied().unwrap_or(0),
        fmt_size(a.bs),
        depth,
        a.ds_transport.name(),
    ));
    let mut t = Table::new(&["phase", "MB/s", "seconds"]);
    t.row(vec!["write".into(), f(w_mb, 1), f(wt.as_secs_f64(), 2)]);
    t.row(vec!["read".into(), f(r_mb, 1), f(rt.as_secs_f64(), 2)]);
    md.push_str(&t.render());
    let mut per = sh
        .per_ds
        .lock()
        .iter()
        .map(|((addr, via), b)| (*addr, via.name(), *b))
        .collect::<Vec<_>>();
    per.sort();
    let mut t = Table::new(&["data server", "over", "bytes written", "bytes read"]);
    for (addr, via, (wr, rd)) in &per {
        t.row(vec![
            addr.to_string(),
            via.to_string(),
            wr.to_string(),
            rd.to_string(),
        ]);
    }
    md.push('\n');
    md.push_str(&t.render());
    let mut results = json!({
        "write_mb_s": w_mb,
        "read_mb_s": r_mb,
        "write_s": wt.as_secs_f64(),
        "read_s": rt.as_secs_f64(),
        "mirrors": mirrors,
        "data_servers": per.iter().map(|(a, via, (wr, rd))| json!({
            "addr": a.to_string(), "transport": via, "bytes_written": wr, "bytes_read": rd,
        })).collect::<Vec<_>>(),
    });
    if let Some((rate, mut lat)) = lg_rate {
        md.push_str(&format!(
            "\nLAYOUTGET + LAYOUTRETURN: {} pairs/s with {} in flight, LAYOUTGET mean {} µs, \
             p99 {} µs\n",
            f(rate, 0),
            a.files,
            f(lat.mean_us(), 1),
            f(lat.pct_us(99.0), 1)
        ));
        results["layoutget_pairs_per_s"] = json!(rate);
        results["layoutget_mean_us"] = json!(lat.mean_us());
        results["layoutget_p99_us"] = json!(lat.pct_us(99.0));
    }
    Ok(Outcome {
        params: json!({"files": a.files, "file_size": size, "bs": a.bs, "iodepth": depth,
                       "layoutgets": a.layoutgets, "ds_transport": a.ds_transport.name()}),
        results,
        markdown: md,
    })
}
