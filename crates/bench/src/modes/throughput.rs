//! The `throughput` mode.

use super::*;

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
