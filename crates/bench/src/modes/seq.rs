//! The `seq` mode.

use super::*;

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
