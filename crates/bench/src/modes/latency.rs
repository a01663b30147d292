//! The `latency` mode.

use super::*;

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
    /// Threads that spin for the whole run, keeping CPUs awake: on a virtual machine an idle
    /// vCPU halts and waking it costs more than a call (tens of µs), which a machine with a
    /// busy or dedicated CPU does not pay; with one spinner on a 2-vCPU guest, client and
    /// server take turns on the other CPU and the round trip is their work alone.
    #[arg(long, default_value_t = 0)]
    pub busy_cpus: u32,
}

/// Threads spinning until dropped (see [`LatencyArgs::busy_cpus`]).
struct Spinners {
    stop: Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Spinners {
    fn start(n: u32) -> Result<Self> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut me = Self {
            stop: stop.clone(),
            threads: Vec::new(),
        };
        for _ in 0..n {
            let stop = stop.clone();
            // named, so that a profile or /proc tells the client's own threads apart
            let t = std::thread::Builder::new()
                .name("spin".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .map_err(|e| err!("starting a spinning thread: {e}"))?;
            me.threads.push(t);
        }
        Ok(me)
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
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
    let _spin = Spinners::start(a.busy_cpus)?;
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
        "µs per call, one call outstanding, {} writes, file of max({}, {} records){}:\n\n",
        stable_name(a.stable),
        fmt_size(a.file_size),
        a.min_ops,
        match a.busy_cpus {
            0 => String::new(),
            n => format!(", {n} CPU(s) kept busy"),
        }
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
            "busy_cpus": a.busy_cpus,
        }),
        results: json!({ "records": jrows, "rtt": jrtt, "skipped_records": skipped }),
        markdown: md,
    })
}
