//! The `ping` mode.

use super::*;

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
