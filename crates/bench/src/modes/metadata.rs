//! The `metadata` mode.

use super::*;

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
