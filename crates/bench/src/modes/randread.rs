//! The `randread` mode.

use super::*;

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
