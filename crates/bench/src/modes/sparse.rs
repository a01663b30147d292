//! The `sparse` mode.

use super::*;

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
