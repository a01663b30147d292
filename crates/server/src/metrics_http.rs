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
