//! The HTTP endpoint Prometheus scrapes (`GET /metrics`), served by hyper on the server's
//! tokio runtime.

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sunrpc::metrics::{MetricsOut, MetricsSource, RpcMetrics};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connections served at once; one past them is closed unanswered, so that a flood of
/// connections costs no more than this many tasks (a scraper tries again at its next round).
pub const MAX_CONNECTIONS: usize = 16;

/// Time a client has to send its request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Time a connection may last in all (a client that does not read its response).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest request read (hyper's smallest read buffer).
const MAX_REQUEST: usize = 8192;

/// Serves the metrics of `metrics` on `l`: `GET /metrics` (or `/`), one request per
/// connection.
pub async fn serve(l: TcpListener, metrics: Arc<RpcMetrics>) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_REQUEST)
        // a scrape every few seconds does not need the connection kept, and an idle
        // connection would hold one of the slots
        .keep_alive(false);
    loop {
        let (sock, peer) = match l.accept().await {
            Ok(x) => x,
            Err(e) => {
                // out of file descriptors and similar: try again in a moment
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "metrics endpoint: connection limit reached, closing");
            continue;
        };
        let http = http.clone();
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let resp = respond(&metrics, &req);
                async move { Ok::<_, Infallible>(resp) }
            });
            let conn = http.serve_connection(TokioIo::new(sock), service);
            match tokio::time::timeout(CONNECTION_TIMEOUT, conn).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "metrics endpoint: bad request"),
                Err(_) => tracing::debug!(%peer, "metrics endpoint: connection timed out"),
            }
            drop(slot);
        });
    }
}

/// The answer to one request: the metrics text for GET (or HEAD) of `/metrics` or `/`.
fn respond<B>(metrics: &RpcMetrics, req: &Request<B>) -> Response<Full<Bytes>> {
    let (status, body) = match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics" | "/") => (StatusCode::OK, metrics.render()),
        (_, "/metrics" | "/") => (StatusCode::METHOD_NOT_ALLOWED, String::new()),
        _ => (StatusCode::NOT_FOUND, String::new()),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    match status {
        StatusCode::OK => {
            let ct = HeaderValue::from_static(sunrpc::metrics::CONTENT_TYPE);
            resp.headers_mut().insert(CONTENT_TYPE, ct);
        }
        StatusCode::METHOD_NOT_ALLOWED => {
            resp.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        }
        _ => {}
    }
    resp
}

/// The server process's own resident memory and CPU time, so that memory per connection and
/// CPU per byte can be read from the same endpoint as the RPC figures.
pub struct ProcessMetrics;

impl MetricsSource for ProcessMetrics {
    fn encode(&self, out: &mut MetricsOut<'_>) -> fmt::Result {
        // statm: sizes in pages; the second field is the resident set
        if let Some(pages) = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        {
            out.gauge(
                "rnfs_process_resident_bytes",
                "Resident memory of the rnfsd process.",
                pages * 4096,
            )?;
        }
        // stat: utime and stime are fields 14 and 15, after the parenthesised command name, in
        // USER_HZ ticks (100 a second on Linux whatever the kernel's HZ)
        if let Some(ticks) = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                let rest = s.get(s.rfind(')')? + 2..)?;
                let f: Vec<&str> = rest.split_whitespace().collect();
                Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
            })
        {
            out.counter_f64(
                "rnfs_process_cpu_seconds_total",
                "CPU time of the rnfsd process, user and system.",
                ticks as f64 / 100.0,
            )?;
        }
        Ok(())
    }
}

/// What clients did with each export (`vfs::Vfs::export_counters`), read at each scrape: the
/// exports in force then, so a reload's changes show from the next scrape.
pub struct ExportMetrics(pub std::sync::Arc<vfs::Vfs>);

impl MetricsSource for ExportMetrics {
    fn encode(&self, out: &mut MetricsOut<'_>) -> fmt::Result {
        let c = self.0.export_counters();
        let series = |f: fn(&vfs::fs::ExportCounters) -> u64| {
            c.iter()
                .map(move |e| ([("export", e.path.display().to_string())], f(e)))
                .collect::<Vec<_>>()
        };
        out.counters(
            "rnfs_export_calls_total",
            "NFS calls and NFSv4 operations on objects of an export, by export path.",
            series(|e| e.calls),
        )?;
        out.counters(
            "rnfs_export_read_bytes_total",
            "READ and READ_PLUS payload bytes sent from an export, by export path.",
            series(|e| e.read_bytes),
        )?;
        out.counters(
            "rnfs_export_write_bytes_total",
            "WRITE payload bytes written into an export, by export path.",
            series(|e| e.write_bytes),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, method: Method) -> Response<Full<Bytes>> {
        let m = RpcMetrics::default();
        m.add_source(Arc::new(ProcessMetrics));
        m.observe(100003, "GETATTR", 1e-4);
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(())
            .expect("a valid request");
        respond(&m, &req)
    }

    #[test]
    fn metrics_and_root_answer_the_text_other_paths_404() {
        for path in ["/metrics", "/"] {
            let r = get(path, Method::GET);
            assert_eq!(r.status(), StatusCode::OK);
            assert_eq!(
                r.headers().get(CONTENT_TYPE).map(HeaderValue::as_bytes),
                Some(sunrpc::metrics::CONTENT_TYPE.as_bytes())
            );
        }
        assert_eq!(get("/nope", Method::GET).status(), StatusCode::NOT_FOUND);
        assert_eq!(
            get("/metrics", Method::POST).status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }
}
