//! The `conns` mode.

use super::*;

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
