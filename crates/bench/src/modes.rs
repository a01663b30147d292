//! The benchmark modes. Each returns its parameters, figures and Markdown tables.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use parking_lot::Mutex;
use serde_json::json;

use crate::client::{Conn, File, Proto, Session, Target};
use crate::err;
use crate::error::Result;
use crate::io::{par, pattern, seq_read, seq_write, WorkDir};
use crate::progress::Progress;
use crate::report::{f, Table};
use crate::stats::{
    fmt_size, ms_per_gb, parse_size, proc_status_kib, reset_hwm, Lat, MachineCpu, ProcCpu, Rng,
};
use crate::{Common, Outcome};

fn stable_arg(s: &str) -> std::result::Result<u32, String> {
    match s {
        "unstable" => Ok(0),
        "datasync" => Ok(1),
        "filesync" => Ok(2),
        _ => Err(format!("{s:?}: use unstable, datasync or filesync")),
    }
}

fn stable_name(s: u32) -> &'static str {
    ["unstable", "datasync", "filesync"][s.min(2) as usize]
}

fn header(s: &Session, mode: &str, c: &Common) -> String {
    format!(
        "\n### {mode}: {} ({} over {} at {})\n\n",
        c.label,
        s.target.proto.name(),
        s.target.via.name(),
        s.target.nfs
    )
}

fn mb_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64().max(1e-9) / 1e6
}

// ---------------------------------------------------------------------------------------------
// latency
// ---------------------------------------------------------------------------------------------

/// Arguments of `latency`.
#[derive(Args, Debug)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub common: Common,
    /// Bytes written per pass (iozone -s); a record size gets at least --min-ops records.
    #[arg(long, default_value = "8m", value_parser = parse_size)]
    pub file_size: u64,
    /// Fewest operations per pass and record size.
    #[arg(long, default_value_t = 32)]
    pub min_ops: u64,
    /// Record sizes.
    #[arg(long, value_delimiter = ',', value_parser = parse_size,
          default_value = "1k,2k,4k,8k,16k,32k,64k,128k,256k,512k,1m")]
    pub records: Vec<u64>,
    /// Calls timed for each of NULL, GETATTR and LOOKUP.
    #[arg(long, default_value_t = 2000)]
    pub rtt_ops: u64,
    /// WRITE stability: unstable, datasync, filesync (iozone -I sends FILE_SYNC writes).
    #[arg(long, default_value = "filesync", value_parser = stable_arg)]
    pub stable: u32,
}

/// One record size of `latency`.
struct LatRow {
    rec: u64,
    ops: u64,
    lat: [Lat; 4],
}

/// µs per operation by record size, one operation outstanding (like iozone -a -N -I).
pub async fn latency(s: &Session, a: &LatencyArgs) -> Result<Outcome> {
    let prog = Arc::new(Progress::start(a.common.quiet));
    let c = s.connect("latency", 1).await?;
    let wd = WorkDir::make(s, &c, "latency").await?;
    let data = pattern(1 << 20);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for &rec in &a.records {
        if rec == 0 || rec > s.max_io as u64 {
            skipped.push(rec);
            continue;
        }
        let ops = (a.file_size / rec).max(a.min_ops);
        let name = format!("lat-{rec}");
        let file = c.create(&wd.fh, &name).await?;
        let mut lat: [Lat; 4] = Default::default();
        for (phase, l) in lat.iter_mut().enumerate() {
            let what = ["write", "rewrite", "read", "reread"][phase];
            prog.phase(&format!("latency {} {what}", fmt_size(rec)), ops);
            *l = Lat::with_capacity(ops as usize);
            for i in 0..ops {
                let off = i * rec;
                let t0 = Instant::now();
                if phase < 2 {
                    c.write(&file, off, data.slice(..rec as usize), a.stable)
                        .await?;
                } else {
                    let (n, _) = c.read(&file, off, rec as u32).await?;
                    if n as u64 != rec {
                        return Err(err!("short READ: {n} of {rec} bytes at {off}"));
                    }
                }
                l.push(t0.elapsed());
                prog.add(1);
            }
            if phase < 2 && a.stable == 0 {
                c.commit(&file).await?;
            }
        }
        c.close(&file).await?;
        c.remove(&wd.fh, &name).await?;
        rows.push(LatRow { rec, ops, lat });
    }

    // Round trips without data: NULL, GETATTR, LOOKUP (after 100 untimed calls each).
    let probe = "rtt-probe";
    let pf = c.create(&wd.fh, probe).await?;
    c.close(&pf).await?;
    // The three kinds take turns, call by call, in a random order each round: a round trip on
    // loopback depends on where the scheduler puts the two threads (about 20 or 70 µs on this
    // 2-CPU machine), which can change between phases and depends on what the call before
    // did (one run on a worker thread leaves the connection's reader asleep); taking turns in
    // shuffled order gives each kind the same conditions.
    let kinds = ["NULL", "GETATTR", "LOOKUP"];
    let mut rtt: Vec<(&str, Lat)> = kinds
        .iter()
        .map(|&k| (k, Lat::with_capacity(a.rtt_ops as usize)))
        .collect();
    let mut rng = crate::stats::Rng::new(0x5eed);
    prog.phase("latency NULL/GETATTR/LOOKUP round trips", a.rtt_ops * 3);
    for i in 0..a.rtt_ops + 100 {
        for k in (1..rtt.len()).rev() {
            rtt.swap(k, rng.below(k as u64 + 1) as usize);
        }
        for (what, l) in rtt.iter_mut() {
            let t0 = Instant::now();
            match *what {
                "NULL" => c.null().await?,
                "GETATTR" => c.getattr(&pf.fh).await?,
                _ => {
                    c.lookup(&wd.fh, probe).await?;
                }
            }
            if i >= 100 {
                l.push(t0.elapsed());
                prog.add(1);
            }
        }
    }
    wd.remove(s, &c).await?;
    c.shutdown().await?;
    drop(prog);

    let mut t = Table::new(&[
        "reclen",
        "ops",
        "write µs",
        "rewrite µs",
        "read µs",
        "reread µs",
    ]);
    let mut jrows = Vec::new();
    for r in &mut rows {
        let m: Vec<f64> = r.lat.iter().map(|l| l.mean_us()).collect();
        let p99: Vec<f64> = r.lat.iter_mut().map(|l| l.pct_us(99.0)).collect();
        t.row(vec![
            fmt_size(r.rec),
            r.ops.to_string(),
            f(m[0], 1),
            f(m[1], 1),
            f(m[2], 1),
            f(m[3], 1),
        ]);
        jrows.push(json!({
            "reclen": r.rec, "ops": r.ops,
            "write_us": m[0], "rewrite_us": m[1], "read_us": m[2], "reread_us": m[3],
            "write_p99_us": p99[0], "rewrite_p99_us": p99[1],
            "read_p99_us": p99[2], "reread_p99_us": p99[3],
        }));
    }
    rtt.sort_by_key(|(what, _)| kinds.iter().position(|k| k == what));
    let mut t2 = Table::new(&["call", "calls", "mean µs", "p50 µs", "p99 µs"]);
    let mut jrtt = serde_json::Map::new();
    for (what, l) in &mut rtt {
        let (mean, p50, p99) = (l.mean_us(), l.pct_us(50.0), l.pct_us(99.0));
        t2.row(vec![
            what.to_string(),
            l.len().to_string(),
            f(mean, 1),
            f(p50, 1),
            f(p99, 1),
        ]);
        jrtt.insert(
            what.to_ascii_lowercase(),
            json!({"mean_us": mean, "p50_us": p50, "p99_us": p99, "calls": l.len()}),
        );
    }
    let mut md = header(s, "latency", &a.common);
    md.push_str(&format!(
        "µs per call, one call outstanding, {} writes, file of max({}, {} records):\n\n",
        stable_name(a.stable),
        fmt_size(a.file_size),
        a.min_ops
    ));
    md.push_str(&t.render());
    if !skipped.is_empty() {
        md.push_str(&format!(
            "\nskipped record sizes above the server's limit of {}: {}\n",
            fmt_size(s.max_io as u64),
            skipped
                .iter()
                .map(|r| fmt_size(*r))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    md.push('\n');
    md.push_str(&t2.render());
    Ok(Outcome {
        params: json!({
            "file_size": a.file_size, "min_ops": a.min_ops, "records": a.records,
            "rtt_ops": a.rtt_ops, "stable": stable_name(a.stable), "max_io": s.max_io,
        }),
        results: json!({ "records": jrows, "rtt": jrtt, "skipped_records": skipped }),
        markdown: md,
    })
}

// ---------------------------------------------------------------------------------------------
// throughput
// ---------------------------------------------------------------------------------------------

/// Arguments of `throughput`.
#[derive(Args, Debug)]
pub struct ThroughputArgs {
    #[command(flatten)]
    pub common: Common,
    /// Workers, each on its own file with one call outstanding (iozone -t).
    #[arg(long, default_value_t = 12)]
    pub workers: usize,
    /// Size of each worker's file (iozone -s).
    #[arg(long, default_value = "16m", value_parser = parse_size)]
    pub file_size: u64,
    /// Record size (iozone -r).
    #[arg(long, default_value = "4k", value_parser = parse_size)]
    pub record: u64,
    /// Connections the workers share (the Linux client uses one per server).
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// WRITE stability: unstable, datasync, filesync.
    #[arg(long, default_value = "filesync", value_parser = stable_arg)]
    pub stable: u32,
}

/// Aggregate ops/s of N workers writing then reading their own files (like iozone -t N -O).
pub async fn throughput(s: &Session, a: &ThroughputArgs) -> Result<Outcome> {
    if a.record == 0 || a.record > s.max_io as u64 {
        return Err(err!("record size {} not in 1..={}", a.record, s.max_io));
    }
    let prog = Arc::new(Progress::start(a.common.quiet));
    let mut conns = Vec::new();
    for i in 0..a.conns.max(1) {
        let depth = a.workers.div_ceil(a.conns.max(1));
        conns.push(Arc::new(s.connect(&format!("tp{i}"), depth).await?));
    }
    let wd = WorkDir::make(s, &conns[0], "throughput").await?;
    let dir = wd.fh.clone();
    let data = pattern(a.record as usize);
    let ops = (a.file_size / a.record).max(1);
    let mut files = Vec::new();
    for w in 0..a.workers {
        files.push(
            conns[w % conns.len()]
                .create(&dir, &format!("tp-{w}"))
                .await?,
        );
    }
    let files = Arc::new(files);
    let mut jres = serde_json::Map::new();
    let mut t = Table::new(&[
        "phase",
        "workers",
        "ops/s (all)",
        "min ops/s",
        "max ops/s",
        "mean µs",
    ]);
    for phase in ["write", "read"] {
        prog.phase(&format!("throughput {phase}"), ops * a.workers as u64);
        let t0 = Instant::now();
        let per = par(a.workers, |w| {
            let c = conns[w % conns.len()].clone();
            let (files, data, prog) = (files.clone(), data.clone(), prog.clone());
            let (rec, stable) = (a.record, a.stable);
            async move {
                let f = &files[w];
                let mut lat = Lat::with_capacity(ops as usize);
                let t0 = Instant::now();
                for i in 0..ops {
                    let t1 = Instant::now();
                    if phase == "write" {
                        c.write(f, i * rec, data.clone(), stable).await?;
                    } else {
                        c.read(f, i * rec, rec as u32).await?;
                    }
                    lat.push(t1.elapsed());
                    prog.add(1);
                }
                if phase == "write" && stable == 0 {
                    c.commit(f).await?;
                }
                Ok((ops as f64 / t0.elapsed().as_secs_f64(), lat))
            }
        })
        .await?;
        let wall = t0.elapsed();
        let all = (ops * a.workers as u64) as f64 / wall.as_secs_f64();
        let min = per.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let max = per.iter().map(|p| p.0).fold(0.0, f64::max);
        let children: f64 = per.iter().map(|p| p.0).sum();
        let mut lat = Lat::default();
        for (_, l) in per {
            lat.merge(l);
        }
        t.row(vec![
            phase.to_string(),
            a.workers.to_string(),
            f(all, 0),
            f(min, 0),
            f(max, 0),
            f(lat.mean_us(), 1),
        ]);
        jres.insert(
            phase.to_string(),
            json!({"ops_per_s": all, "children_ops_per_s": children, "min_worker_ops_per_s": min,
                   "max_worker_ops_per_s": max, "mean_us": lat.mean_us(), "p99_us": lat.pct_us(99.0)}),
        );
    }
    for (w, f) in files.iter().enumerate() {
        conns[w % conns.len()].close(f).await?;
    }
    wd.remove(s, &conns[0]).await?;
    for c in conns.iter() {
        c.shutdown().await?;
    }
    drop(prog);
    let mut md = header(s, "throughput", &a.common);
    md.push_str(&format!(
        "{} workers on {} connection(s), each a {} file in {} records ({} writes); ops/s (all) = all operations / wall time:\n\n",
        a.workers,
        conns.len(),
        fmt_size(a.file_size),
        fmt_size(a.record),
        stable_name(a.stable)
    ));
    md.push_str(&t.render());
    Ok(Outcome {
        params: json!({"workers": a.workers, "file_size": a.file_size, "record": a.record,
                       "conns": conns.len(), "stable": stable_name(a.stable)}),
        results: serde_json::Value::Object(jres),
        markdown: md,
    })
}

// ---------------------------------------------------------------------------------------------
// randread
// ---------------------------------------------------------------------------------------------

/// Arguments of `randread`.
#[derive(Args, Debug)]
pub struct RandreadArgs {
    #[command(flatten)]
    pub common: Common,
    /// Size of the file read (written first).
    #[arg(long, default_value = "256m", value_parser = parse_size)]
    pub file_size: u64,
    /// Job counts to run; each job has its own connection (and NFSv4 session).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub jobs: Vec<usize>,
    /// Reads in flight per job.
    #[arg(long, default_value_t = 4)]
    pub iodepth: usize,
    /// Read size.
    #[arg(long, default_value = "4k", value_parser = parse_size)]
    pub bs: u64,
    /// Measured seconds per job count.
    #[arg(long, default_value_t = 2.0)]
    pub runtime: f64,
    /// Unmeasured seconds before each measurement.
    #[arg(long, default_value_t = 0.5)]
    pub ramp: f64,
}

/// Random reads at jobs × queue depth (like fio --rw=randread --bs=4k).
pub async fn randread(s: &Session, a: &RandreadArgs) -> Result<Outcome> {
    if a.bs == 0 || a.bs > s.max_io as u64 || a.file_size < a.bs {
        return Err(err!("bad --bs {} for file size {}", a.bs, a.file_size));
    }
    let prog = Arc::new(Progress::start(a.common.quiet));
    let setup = Arc::new(s.connect("rr-setup", 4).await?);
    let wd = WorkDir::make(s, &setup, "randread").await?;
    let file = setup.create(&wd.fh, "rr").await?;
    prog.phase("randread: writing the file", a.file_size);
    seq_write(
        &setup,
        &file,
        a.file_size,
        s.max_io,
        4,
        0,
        &pattern(s.max_io as usize),
        &prog,
    )
    .await?;
    setup.close(&file).await?;
    let blocks = a.file_size / a.bs;
    let mut t = Table::new(&[
        "jobs",
        "in flight",
        "kIOPS",
        "MiB/s",
        "mean µs",
        "p99 µs",
        "server CPU µs/read",
        "server max RSS KiB",
    ]);
    let mut jrows = Vec::new();
    for &jobs in &a.jobs {
        let jobs = jobs.max(1);
        let mut conns = Vec::new();
        for j in 0..jobs {
            let c = Arc::new(s.connect(&format!("rr{j}"), a.iodepth).await?);
            let f = c.open(&wd.fh, "rr", false).await?;
            conns.push((c, f));
        }
        let hwm_reset = a.common.server_pid.map(reset_hwm).unwrap_or(false);
        prog.phase(&format!("randread {jobs} job(s) × {}", a.iodepth), 0);
        let t0 = Instant::now();
        let start = t0 + Duration::from_secs_f64(a.ramp);
        let end = start + Duration::from_secs_f64(a.runtime);
        let conns = Arc::new(conns);
        // the server's CPU over the measured window only (not the ramp, nor the connecting)
        let cpu = a.common.server_pid.map(|pid| {
            tokio::spawn(async move {
                tokio::time::sleep_until(start.into()).await;
                let cpu = ProcCpu::start(Some(pid));
                tokio::time::sleep_until(end.into()).await;
                cpu.ns()
            })
        });
        let per = par(jobs * a.iodepth, |i| {
            let conns = conns.clone();
            let prog = prog.clone();
            let bs = a.bs;
            async move {
                let (c, f) = &conns[i % conns.len()];
                let mut rng = Rng::new(i as u64 + 1);
                let mut lat = Lat::with_capacity(1 << 16);
                let mut n = 0u64;
                loop {
                    let t1 = Instant::now();
                    if t1 >= end {
                        return Ok((n, lat));
                    }
                    let off = rng.below(blocks) * bs;
                    let (got, _) = c.read(f, off, bs as u32).await?;
                    if got as u64 != bs {
                        return Err(err!("short READ: {got} of {bs} bytes at {off}"));
                    }
                    let t2 = Instant::now();
                    if t1 >= start && t2 <= end {
                        n += 1;
                        lat.push(t2 - t1);
                    }
                    prog.add(1);
                }
            }
        })
        .await?;
        let rss = a
            .common
            .server_pid
            .and_then(|p| proc_status_kib(p, "VmHWM"));
        let mut lat = Lat::default();
        let mut n = 0;
        for (k, l) in per {
            n += k;
            lat.merge(l);
        }
        let iops = n as f64 / a.runtime;
        let mib = iops * a.bs as f64 / (1 << 20) as f64;
        let (mean, p99) = (lat.mean_us(), lat.pct_us(99.0));
        let cpu_ns = match cpu {
            Some(h) => h.await.ok().flatten(),
            None => None,
        };
        let cpu_us = cpu_ns.map(|ns| ns as f64 / 1e3 / n.max(1) as f64);
        t.row(vec![
            jobs.to_string(),
            (jobs * a.iodepth).to_string(),
            f(iops / 1000.0, 2),
            f(mib, 1),
            f(mean, 1),
            f(p99, 1),
            cpu_us.map(|c| f(c, 2)).unwrap_or_else(|| "-".into()),
            rss.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
        ]);
        jrows.push(json!({
            "jobs": jobs, "iodepth": a.iodepth, "outstanding": jobs * a.iodepth,
            "iops": iops, "kiops": iops / 1000.0, "mib_s": mib, "mean_us": mean, "p99_us": p99,
            "server_cpu_us_per_read": cpu_us,
            "server_max_rss_kib": rss, "hwm_reset": hwm_reset,
        }));
        for (c, f) in conns.iter() {
            c.close(f).await?;
            c.shutdown().await?;
        }
    }
    wd.remove(s, &setup).await?;
    setup.shutdown().await?;
    drop(prog);
    let mut md = header(s, "randread", &a.common);
    md.push_str(&format!(
        "{} random reads over a {} file, {} reads in flight per job, {} s measured after {} s ramp:\n\n",
        fmt_size(a.bs),
        fmt_size(a.file_size),
        a.iodepth,
        a.runtime,
        a.ramp
    ));
    md.push_str(&t.render());
    Ok(Outcome {
        params: json!({"file_size": a.file_size, "jobs": a.jobs, "iodepth": a.iodepth, "bs": a.bs,
                       "runtime_s": a.runtime, "ramp_s": a.ramp}),
        results: json!({ "rows": jrows }),
        markdown: md,
    })
}

// ---------------------------------------------------------------------------------------------
// seq
// ---------------------------------------------------------------------------------------------

/// Arguments of `seq`.
#[derive(Args, Debug)]
pub struct SeqArgs {
    #[command(flatten)]
    pub common: Common,
    /// File size.
    #[arg(long, default_value = "512m", value_parser = parse_size)]
    pub file_size: u64,
    /// Record size.
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    pub bs: u64,
    /// Calls in flight.
    #[arg(long, default_value_t = 4)]
    pub iodepth: usize,
    /// WRITE stability (unstable: a COMMIT at the end, timed).
    #[arg(long, default_value = "unstable", value_parser = stable_arg)]
    pub stable: u32,
    /// Times the file is read after it is written (the read rate is over all of them): a long
    /// read phase to profile the server on.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub read_passes: u32,
}

/// Sequential write then read of one file in large records (like dd bs=1M).
pub async fn seq(s: &Session, a: &SeqArgs) -> Result<Outcome> {
    if a.bs == 0 || a.bs > s.max_io as u64 {
        return Err(err!(
            "record size {} above the server's limit {}",
            a.bs,
            s.max_io
        ));
    }
    let prog = Arc::new(Progress::start(a.common.quiet));
    let c = Arc::new(s.connect("seq", a.iodepth).await?);
    let wd = WorkDir::make(s, &c, "seq").await?;
    let file = c.create(&wd.fh, "seq").await?;
    let data = pattern(a.bs as usize);
    let (wt, w) = seq_write_phase(&c, &file, a, &data, &prog, "seq write").await?;
    // The same records again over the file's existing pages (iozone's rewrite): no page is
    // allocated, so a VM whose freshly allocated memory faults in the host (free page
    // reporting) does not decide the figure, as it can the first write's.
    let (rwt, rw) = seq_write_phase(&c, &file, a, &data, &prog, "seq rewrite").await?;
    let total = a.file_size * a.read_passes as u64;
    prog.phase("seq read", total);
    let cpu = PhaseCpu::start(a.common.server_pid);
    let mut rt = std::time::Duration::ZERO;
    for _ in 0..a.read_passes {
        let rp = seq_read(&c, &file, a.file_size, a.bs as u32, a.iodepth, false, &prog).await?;
        if rp.data != a.file_size {
            return Err(err!("read {} bytes of {}", rp.data, a.file_size));
        }
        rt += rp.elapsed;
    }
    let r = cpu.end(total);
    c.close(&file).await?;
    wd.remove(s, &c).await?;
    c.shutdown().await?;
    drop(prog);
    let (w_mb, rw_mb, r_mb) = (
        mb_s(a.file_size, wt),
        mb_s(a.file_size, rwt),
        mb_s(total, rt),
    );
    let mut t = Table::new(&[
        "direction",
        "MB/s",
        "seconds",
        "server CPU ms/GB",
        "client CPU ms/GB",
        "machine idle %",
    ]);
    let opt = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| f(v, 1));
    for (dir, mb, secs, p) in [
        ("write", w_mb, wt, &w),
        ("rewrite", rw_mb, rwt, &rw),
        ("read", r_mb, rt, &r),
    ] {
        t.row(vec![
            dir.into(),
            f(mb, 1),
            f(secs.as_secs_f64(), 3),
            opt(p.server),
            opt(p.client),
            opt(p.idle_pct),
        ]);
    }
    let mut md = header(s, "seq", &a.common);
    md.push_str(&format!(
        "{} file in {} records, {} in flight, {} writes, written twice (rewrite: over its pages) and read {} time(s) (MB = 10^6 bytes; server CPU = user + system time of the server's threads per GB moved, with --server-pid; client CPU = rnfs-bench's own; machine idle = share of all CPUs' time idle during the phase, which with a server on this machine says whether the CPUs or a serial path bound the rate):\n\n",
        fmt_size(a.file_size),
        fmt_size(a.bs),
        a.iodepth,
        stable_name(a.stable),
        a.read_passes
    ));
    md.push_str(&t.render());
    Ok(Outcome {
        params: json!({"file_size": a.file_size, "bs": a.bs, "iodepth": a.iodepth,
                       "stable": stable_name(a.stable), "read_passes": a.read_passes}),
        results: json!({"write_mb_s": w_mb, "read_mb_s": r_mb,
                        "write_s": wt.as_secs_f64(), "read_s": rt.as_secs_f64(),
                        "rewrite_mb_s": rw_mb, "rewrite_s": rwt.as_secs_f64(),
                        "rewrite_cpu_ms_per_gb": rw.server,
                        "rewrite_client_cpu_ms_per_gb": rw.client,
                        "rewrite_machine_idle_pct": rw.idle_pct,
                        "write_cpu_ms_per_gb": w.server, "read_cpu_ms_per_gb": r.server,
                        "write_client_cpu_ms_per_gb": w.client,
                        "read_client_cpu_ms_per_gb": r.client,
                        "write_machine_idle_pct": w.idle_pct,
                        "read_machine_idle_pct": r.idle_pct}),
        markdown: md,
    })
}

/// One timed pass of `seq`'s writes over the whole file: its time and where its CPU went.
async fn seq_write_phase(
    c: &Arc<Conn>,
    file: &File,
    a: &SeqArgs,
    data: &Bytes,
    prog: &Arc<Progress>,
    name: &str,
) -> Result<(Duration, PhaseFigures)> {
    prog.phase(name, a.file_size);
    let cpu = PhaseCpu::start(a.common.server_pid);
    let t = seq_write(
        c,
        file,
        a.file_size,
        a.bs as u32,
        a.iodepth,
        a.stable,
        data,
        prog,
    )
    .await?;
    Ok((t, cpu.end(a.file_size)))
}

/// The CPU counters of a phase, started at its beginning: the server's, rnfs-bench's own and
/// the machine's.
struct PhaseCpu {
    server: ProcCpu,
    own: ProcCpu,
    machine: MachineCpu,
}

/// Where a phase's CPU went, per GB moved.
struct PhaseFigures {
    /// The server's ms per GB (with `--server-pid`).
    server: Option<f64>,
    /// rnfs-bench's own ms per GB (None without a readable /proc).
    client: Option<f64>,
    /// Share of the machine's CPU time idle during the phase.
    idle_pct: Option<f64>,
}

impl PhaseCpu {
    fn start(server_pid: Option<u32>) -> Self {
        PhaseCpu {
            server: ProcCpu::start(server_pid),
            own: ProcCpu::own(),
            machine: MachineCpu::start(),
        }
    }

    /// The figures of the phase so far, `bytes` having been moved.
    fn end(&self, bytes: u64) -> PhaseFigures {
        PhaseFigures {
            server: self.server.ns().map(|ns| ms_per_gb(ns, bytes)),
            client: self.own.ns().map(|ns| ms_per_gb(ns, bytes)),
            idle_pct: self.machine.idle_pct(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// metadata
// ---------------------------------------------------------------------------------------------

/// Arguments of `metadata`.
#[derive(Args, Debug)]
pub struct MetadataArgs {
    #[command(flatten)]
    pub common: Common,
    /// Files created, statted and removed.
    #[arg(long, default_value_t = 2000)]
    pub files: usize,
    /// Connections.
    #[arg(long, default_value_t = 2)]
    pub conns: usize,
    /// Calls in flight per connection.
    #[arg(long, default_value_t = 8)]
    pub iodepth: usize,
    /// Full listings of the directory (run concurrently, one per task at most).
    #[arg(long, default_value_t = 8)]
    pub readdir_passes: usize,
}

/// Creates, stats, lists and removes files in one directory (like mdtest).
pub async fn metadata(s: &Session, a: &MetadataArgs) -> Result<Outcome> {
    let prog = Arc::new(Progress::start(a.common.quiet));
    let nconn = a.conns.max(1);
    let tasks = nconn * a.iodepth.max(1);
    let mut conns = Vec::new();
    for i in 0..nconn {
        conns.push(Arc::new(s.connect(&format!("md{i}"), a.iodepth).await?));
    }
    let conns = Arc::new(conns);
    let wd = WorkDir::make(s, &conns[0], "metadata").await?;
    let dir = wd.fh.clone();
    let n = a.files;
    let handles: Arc<Vec<Mutex<Bytes>>> =
        Arc::new((0..n).map(|_| Mutex::new(Bytes::new())).collect());
    let name = |i: usize| format!("f{i:07}");
    let mut rates = Vec::new();
    for phase in ["create", "stat", "readdir", "remove"] {
        let units = if phase == "readdir" {
            a.readdir_passes
        } else {
            n
        };
        prog.phase(&format!("metadata {phase}"), units as u64);
        let next = Arc::new(AtomicUsize::new(0));
        let entries = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        par(tasks.min(units.max(1)), |i| {
            let c = conns[i % conns.len()].clone();
            let (next, handles, dir, prog, entries) = (
                next.clone(),
                handles.clone(),
                dir.clone(),
                prog.clone(),
                entries.clone(),
            );
            async move {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= units {
                        return Ok(());
                    }
                    match phase {
                        "create" => {
                            let fh = c.touch(&dir, &name(k)).await?;
                            *handles[k].lock() = fh;
                        }
                        "stat" => {
                            let fh = handles[k].lock().clone();
                            c.getattr(&fh).await?;
                        }
                        "readdir" => {
                            let (names, _) = c.readdir(&dir).await?;
                            if names.len() != n {
                                return Err(err!(
                                    "listing has {} entries, expected {n}",
                                    names.len()
                                ));
                            }
                            entries.fetch_add(names.len() as u64, Ordering::Relaxed);
                        }
                        _ => c.remove(&dir, &name(k)).await?,
                    }
                    prog.add(1);
                }
            }
        })
        .await?;
        let el = t0.elapsed().as_secs_f64();
        let (ops, count) = if phase == "readdir" {
            (entries.load(Ordering::Relaxed), a.readdir_passes as u64)
        } else {
            (n as u64, n as u64)
        };
        rates.push((phase, ops as f64 / el, count, el));
    }
    wd.remove(s, &conns[0]).await?;
    for c in conns.iter() {
        c.shutdown().await?;
    }
    drop(prog);
    let mut t = Table::new(&["operation", "count", "per second", "seconds"]);
    let mut jres = serde_json::Map::new();
    for (phase, rate, count, el) in &rates {
        let label = if *phase == "readdir" {
            "readdir (entries)".to_string()
        } else {
            phase.to_string()
        };
        t.row(vec![label, count.to_string(), f(*rate, 0), f(*el, 3)]);
        jres.insert(format!("{phase}_per_s"), json!(rate));
    }
    let geo = rates.iter().map(|r| r.1.max(1e-9).ln()).sum::<f64>() / rates.len() as f64;
    jres.insert("geomean_per_s".into(), json!(geo.exp()));
    let mut md = header(s, "metadata", &a.common);
    md.push_str(&format!(
        "{n} files in one directory, {nconn} connection(s) × {} in flight; readdir = {} full listings ({}):\n\n",
        a.iodepth,
        a.readdir_passes,
        if s.target.proto == Proto::V3 { "READDIRPLUS" } else { "READDIR with attributes" }
    ));
    md.push_str(&t.render());
    md.push_str(&format!(
        "\ngeometric mean of the four rates: {:.0}/s\n",
        geo.exp()
    ));
    Ok(Outcome {
        params: json!({"files": n, "conns": nconn, "iodepth": a.iodepth,
                       "readdir_passes": a.readdir_passes}),
        results: serde_json::Value::Object(jres),
        markdown: md,
    })
}

// ---------------------------------------------------------------------------------------------
// sparse
// ---------------------------------------------------------------------------------------------

/// Arguments of `sparse`.
#[derive(Args, Debug)]
pub struct SparseArgs {
    #[command(flatten)]
    pub common: Common,
    /// Size of each file.
    #[arg(long, default_value = "64m", value_parser = parse_size)]
    pub file_size: u64,
    /// Data / hole granularity of the 50 % file.
    #[arg(long, default_value = "64k", value_parser = parse_size)]
    pub chunk: u64,
    /// Read size.
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    pub bs: u64,
    /// Calls in flight.
    #[arg(long, default_value_t = 4)]
    pub iodepth: usize,
    /// Passes of each (file, operation), interleaved.
    #[arg(long, default_value_t = 3)]
    pub passes: usize,
    /// The export's directory on this machine (the server runs here, not on tmpfs): every read
    /// is also made right after the file was dropped from the page cache (seed 004's "uncached
    /// on server").
    #[arg(long)]
    pub evict_dir: Option<std::path::PathBuf>,
}

/// One (file, operation, cache state) of `sparse`, summed over the passes.
#[derive(Debug, Clone, Copy, Default)]
struct SparseAcc {
    pass: crate::io::ReadPass,
    /// Server CPU over the passes; None when not measured (no --server-pid, or /proc failed).
    cpu_ns: Option<u64>,
}

impl SparseAcc {
    fn add(&mut self, p: &crate::io::ReadPass, cpu_ns: Option<u64>) {
        let first = self.pass.calls == 0;
        self.pass.elapsed += p.elapsed;
        self.pass.data += p.data;
        self.pass.holes += p.holes;
        self.pass.wire += p.wire;
        self.pass.calls += p.calls;
        self.cpu_ns = match (first, self.cpu_ns, cpu_ns) {
            (true, _, n) => n,
            (false, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
}

/// READ against READ_PLUS over dense, half-sparse and empty files (NFSv4.2).
pub async fn sparse(s: &Session, a: &SparseArgs) -> Result<Outcome> {
    if s.target.proto != Proto::V42 {
        return Err(err!("sparse needs --proto v4.2 (READ_PLUS)"));
    }
    if a.bs == 0 || a.bs > s.max_io as u64 || a.chunk == 0 {
        return Err(err!("bad --bs or --chunk"));
    }
    let prog = Arc::new(Progress::start(a.common.quiet));
    let c = Arc::new(s.connect("sparse", a.iodepth.max(4)).await?);
    let wd = WorkDir::make(s, &c, "sparse").await?;
    let data = pattern(a.chunk.min(1 << 20) as usize);
    let mut files = Vec::new();
    for holes in [0u32, 50, 100] {
        let name = format!("sparse-{holes}");
        let file = c.create(&wd.fh, &name).await?;
        prog.phase(&format!("sparse: writing the {holes} % holes file"), 0);
        match holes {
            0 => {
                seq_write(
                    &c,
                    &file,
                    a.file_size,
                    s.max_io,
                    4,
                    0,
                    &pattern(s.max_io as usize),
                    &prog,
                )
                .await?;
            }
            50 => {
                let chunks = a.file_size.div_ceil(a.chunk);
                let next = Arc::new(AtomicU64::new(0));
                par(4, |_| {
                    let (c, file, next, data) =
                        (c.clone(), file.clone(), next.clone(), data.clone());
                    let (chunk, size) = (a.chunk, a.file_size);
                    async move {
                        loop {
                            let k = next.fetch_add(2, Ordering::Relaxed);
                            if k >= chunks {
                                return Ok(());
                            }
                            let off = k * chunk;
                            let len = (size - off).min(chunk).min(data.len() as u64) as usize;
                            c.write(&file, off, data.slice(..len), 0).await?;
                        }
                    }
                })
                .await?;
                c.commit(&file).await?;
            }
            _ => {}
        }
        c.set_size(&file, a.file_size).await?;
        files.push((holes, file));
    }
    // Interleaved passes: for each pass, each file, READ then READ_PLUS; with --evict-dir each
    // of them first right after the file left the page cache, then again with it cached. A
    // server whose READ_PLUS replies cannot be used (no progress, wrong lengths) gets its error
    // recorded.
    let evict = match &a.evict_dir {
        Some(d) => {
            crate::io::check_evictable(d)?;
            Some(d.join(&wd.name))
        }
        None => None,
    };
    let caches: &[bool] = if evict.is_some() {
        &[true, false]
    } else {
        &[false]
    };
    let pid = a.common.server_pid;
    // acc[file][uncached][plus]
    let mut acc: Vec<[[SparseAcc; 2]; 2]> = vec![Default::default(); files.len()];
    let mut plus_err: Vec<Option<String>> = vec![None; files.len()];
    for pass in 0..a.passes.max(1) {
        for (k, (holes, file)) in files.iter().enumerate() {
            for (j, plus) in [false, true].into_iter().enumerate() {
                for &uncached in caches {
                    if plus && plus_err[k].is_some() {
                        continue;
                    }
                    prog.phase(
                        &format!(
                            "sparse pass {} {holes} % holes {}{}",
                            pass + 1,
                            if plus { "READ_PLUS" } else { "READ" },
                            if uncached { " uncached" } else { "" }
                        ),
                        a.file_size,
                    );
                    if let (true, Some(dir)) = (uncached, &evict) {
                        crate::io::evict_local(&dir.join(format!("sparse-{holes}")))?;
                    }
                    let cpu = ProcCpu::start(pid);
                    let p =
                        match seq_read(&c, file, a.file_size, a.bs as u32, a.iodepth, plus, &prog)
                            .await
                        {
                            Ok(p) if p.data + p.holes == a.file_size => p,
                            Ok(p) => {
                                let e = err!(
                                    "{holes} % holes: read {} data + {} hole bytes of {}",
                                    p.data,
                                    p.holes,
                                    a.file_size
                                );
                                if !plus {
                                    return Err(e);
                                }
                                plus_err[k] = Some(e.to_string());
                                continue;
                            }
                            Err(e) if plus => {
                                plus_err[k] = Some(e.to_string());
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                    acc[k][uncached as usize][j].add(&p, cpu.ns());
                }
            }
        }
    }
    for (_, f) in &files {
        c.close(f).await?;
    }
    wd.remove(s, &c).await?;
    c.shutdown().await?;
    drop(prog);
    let mut cols = vec![
        "holes",
        "server cache",
        "READ MB/s",
        "READ_PLUS MB/s",
        "READ_PLUS / READ",
        "READ wire MiB",
        "READ_PLUS wire MiB",
    ];
    if pid.is_some() {
        cols.extend(["READ server CPU ms/GB", "READ_PLUS server CPU ms/GB"]);
    }
    let mut t = Table::new(&cols);
    let passes = a.passes.max(1) as u64;
    let mut jrows = [Vec::new(), Vec::new()];
    for &uncached in caches {
        for (k, (holes, _)) in files.iter().enumerate() {
            let [r, p] = &acc[k][uncached as usize];
            let p = if plus_err[k].is_some() { None } else { Some(p) };
            let rm = mb_s(a.file_size * passes, r.pass.elapsed);
            let pm = p.map(|p| mb_s(a.file_size * passes, p.pass.elapsed));
            let wire = |x: &SparseAcc| x.pass.wire as f64 / passes as f64 / (1 << 20) as f64;
            let cpu = |x: &SparseAcc| x.cpu_ns.map(|ns| ms_per_gb(ns, a.file_size * passes));
            let opt = |v: Option<f64>, d: usize| v.map(|v| f(v, d)).unwrap_or_else(|| "-".into());
            let mut row = vec![
                format!("{holes} %"),
                if uncached { "evicted" } else { "cached" }.into(),
                f(rm, 1),
                pm.map(|v| f(v, 1)).unwrap_or_else(|| "failed".into()),
                opt(pm.map(|v| v / rm), 2),
                f(wire(r), 1),
                opt(p.map(wire), 1),
            ];
            if pid.is_some() {
                row.extend([opt(cpu(r), 1), opt(p.and_then(cpu), 1)]);
            }
            t.row(row);
            jrows[uncached as usize].push(json!({
                "holes_pct": holes,
                "read_mb_s": rm,
                "read_plus_mb_s": pm,
                "read_plus_vs_read": pm.map(|v| v / rm),
                "read_wire_mib": wire(r),
                "read_plus_wire_mib": p.map(wire),
                "read_plus_hole_bytes": p.map(|p| p.pass.holes / passes),
                "read_cpu_ms_per_gb": cpu(r),
                "read_plus_cpu_ms_per_gb": p.and_then(cpu),
                "read_plus_error": plus_err[k],
            }));
        }
    }
    let mut md = header(s, "sparse", &a.common);
    md.push_str(&format!(
        "{} files, {} reads, {} in flight, {} interleaved passes; MB/s of file bytes (10^6), wire = reply bytes per pass; 50 % = alternating {} data / hole{}{}:\n\n",
        fmt_size(a.file_size),
        fmt_size(a.bs),
        a.iodepth,
        passes,
        fmt_size(a.chunk),
        if evict.is_some() {
            "; evicted = read right after the file was dropped from the server's page cache (posix_fadvise DONTNEED on this machine), cached = the same read again"
        } else {
            ""
        },
        if pid.is_some() {
            "; server CPU = user + system time of the server's threads per GB of file bytes"
        } else {
            ""
        }
    ));
    md.push_str(&t.render());
    for (k, (holes, _)) in files.iter().enumerate() {
        if let Some(e) = &plus_err[k] {
            md.push_str(&format!("\nREAD_PLUS on the {holes} % file failed: {e}\n"));
        }
    }
    let [cached_rows, uncached_rows] = jrows;
    let mut results = json!({"rows": cached_rows});
    if evict.is_some() {
        results["uncached_rows"] = json!(uncached_rows);
    }
    Ok(Outcome {
        params: json!({"file_size": a.file_size, "chunk": a.chunk, "bs": a.bs,
                       "iodepth": a.iodepth, "passes": passes,
                       "evict_dir": a.evict_dir.as_ref().map(|d| d.display().to_string())}),
        results,
        markdown: md,
    })
}

// ---------------------------------------------------------------------------------------------
// conns
// ---------------------------------------------------------------------------------------------

/// Arguments of `conns`.
#[derive(Args, Debug)]
pub struct ConnsArgs {
    #[command(flatten)]
    pub common: Common,
    /// Connection counts, ascending; connections are added, never closed, between steps.
    #[arg(long, value_delimiter = ',', default_value = "1,8,64,256")]
    pub counts: Vec<usize>,
    /// Seconds to wait after the connections are up before reading the server's memory.
    #[arg(long, default_value_t = 1.0)]
    pub settle: f64,
}

/// Server memory with many idle connections (each made one NULL call, then stays open).
pub async fn conns(s: &Session, a: &ConnsArgs) -> Result<Outcome> {
    let pid = a
        .common
        .server_pid
        .ok_or_else(|| err!("conns needs --server-pid"))?;
    let prog = Progress::start(a.common.quiet);
    let mut open: Vec<Conn> = Vec::new();
    let mut rows = Vec::new();
    let mut counts = a.counts.clone();
    counts.sort_unstable();
    for &n in &counts {
        prog.phase(&format!("conns: {n} idle connections"), n as u64);
        while open.len() < n {
            let c = s.connect(&format!("idle{}", open.len()), 1).await?;
            c.null().await?;
            open.push(c);
            prog.add(1);
        }
        tokio::time::sleep(Duration::from_secs_f64(a.settle)).await;
        // Every connection must still be served.
        for c in &open {
            c.null().await?;
        }
        let rss = proc_status_kib(pid, "VmRSS").ok_or_else(|| err!("no /proc/{pid}/status"))?;
        rows.push((n, rss));
    }
    for c in &open {
        c.shutdown().await?;
    }
    drop(prog);
    let base = rows.first().map(|r| r.1).unwrap_or(0);
    let mut t = Table::new(&["idle connections", "server RSS KiB", "vs first row KiB"]);
    let mut jrows = Vec::new();
    for (n, rss) in &rows {
        t.row(vec![
            n.to_string(),
            rss.to_string(),
            format!("{:+}", *rss as i64 - base as i64),
        ]);
        jrows.push(json!({"conns": n, "rss_kib": rss, "delta_kib": *rss as i64 - base as i64}));
    }
    let mut md = header(s, "conns", &a.common);
    md.push_str(&format!(
        "server VmRSS after each connection made one {} NULL and sat idle for {} s:\n\n",
        s.target.proto.name(),
        a.settle
    ));
    md.push_str(&t.render());
    Ok(Outcome {
        params: json!({"counts": counts, "settle_s": a.settle, "server_pid": pid}),
        results: json!({"rows": jrows}),
        markdown: md,
    })
}

// ---------------------------------------------------------------------------------------------
// ping
// ---------------------------------------------------------------------------------------------

/// Arguments of `ping`.
#[derive(Args, Debug)]
pub struct PingArgs {
    #[command(flatten)]
    pub common: Common,
    /// Seconds to keep trying.
    #[arg(long, default_value_t = 30.0)]
    pub wait: f64,
}

/// Waits until the server mounts and answers.
pub async fn ping(t: Target, a: &PingArgs) -> Result<Outcome> {
    let deadline = Instant::now() + Duration::from_secs_f64(a.wait);
    let mut short = t.clone();
    short.timeout = Duration::from_secs(2);
    loop {
        let t0 = Instant::now();
        let r = async {
            let s = Session::open(short.clone()).await?;
            let c = s.connect("ping", 1).await?;
            c.getattr(&s.root).await?;
            c.shutdown().await?;
            Ok::<_, crate::error::Error>(s.max_io)
        }
        .await;
        match r {
            Ok(max_io) => {
                let ms = t0.elapsed().as_secs_f64() * 1000.0;
                return Ok(Outcome {
                    params: json!({"wait_s": a.wait}),
                    results: json!({"ok": true, "ms": ms, "max_io": max_io}),
                    markdown: format!(
                        "{} answers ({}, max I/O {}), {ms:.1} ms\n",
                        t.nfs,
                        t.proto.name(),
                        fmt_size(max_io as u64)
                    ),
                });
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(err!("{} not ready after {} s: {e}", t.nfs, a.wait))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
