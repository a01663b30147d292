//! A minimal HTTP endpoint for Prometheus scrapes (`GET /metrics`).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use sunrpc::metrics::RpcMetrics;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Largest request head we read.
const MAX_REQUEST: usize = 8192;

/// Serves the metrics text on every connection to `l`.
pub async fn serve(l: TcpListener, metrics: Arc<RpcMetrics>) -> io::Result<()> {
    loop {
        let (mut s, _) = match l.accept().await {
            Ok(x) => x,
            Err(_) => continue,
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            let head = tokio::time::timeout(Duration::from_secs(5), async {
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return false,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                true
            })
            .await;
            if head != Ok(true) {
                return;
            }
            let first = buf.split(|b| *b == b'\n').next().unwrap_or_default();
            let resp = if first.starts_with(b"GET /metrics ") || first.starts_with(b"GET / ") {
                let body = metrics.render();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ = s.write_all(resp.as_bytes()).await;
            let _ = s.shutdown().await;
        });
    }
}

/// The server process's own resident memory and CPU time, so that memory per connection and
/// CPU per byte can be read from the same endpoint as the RPC figures.
pub struct ProcessMetrics;

impl sunrpc::metrics::MetricsSource for ProcessMetrics {
    fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        // statm: sizes in pages; the second field is the resident set
        if let Some(pages) = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        {
            let _ = writeln!(out, "# TYPE rnfs_process_resident_bytes gauge");
            let _ = writeln!(out, "rnfs_process_resident_bytes {}", pages * 4096);
        }
        // stat: utime and stime are fields 14 and 15, after the parenthesised command name, in
        // USER_HZ ticks (100 a second on Linux whatever the kernel's HZ)
        if let Some(ticks) = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                let f: Vec<&str> = rest.split_whitespace().collect();
                Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
            })
        {
            let _ = writeln!(out, "# TYPE rnfs_process_cpu_seconds_total counter");
            let _ = writeln!(
                out,
                "rnfs_process_cpu_seconds_total {:.2}",
                ticks as f64 / 100.0
            );
        }
    }
}
