//! Physical ceilings of the machine, measured in the same run as the servers: a loopback TCP
//! stream (the most a READ stream can carry), a loopback TCP ping-pong (the least a round trip
//! can take) and memory-copy bandwidth.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use crate::error::Result;
use crate::report::{f, Table};
use crate::stats::{fmt_size, parse_size};
use crate::Outcome;

/// Arguments of `ceiling`.
#[derive(Args, Debug)]
pub struct CeilingArgs {
    /// Seconds each measurement runs.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Write size of the TCP stream (like a 1 MiB READ reply).
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    pub size: u64,
    /// Message size of the ping-pong (about a NULL call).
    #[arg(long, default_value_t = 64)]
    pub ping_size: usize,
    /// Buffer size of the memory copy.
    #[arg(long, default_value = "64m", value_parser = parse_size)]
    pub copy_size: u64,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn tcp_stream(secs: f64, size: usize) -> std::io::Result<f64> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let rx = std::thread::spawn(move || -> std::io::Result<(u64, Duration)> {
        let (mut s, _) = l.accept()?;
        let mut buf = vec![0u8; size];
        let mut total = 0u64;
        // The clock starts at the first byte received.
        let n = s.read(&mut buf)?;
        let t0 = Instant::now();
        total += n as u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        Ok((total - n as u64, t0.elapsed()))
    });
    let mut s = TcpStream::connect(addr)?;
    let buf = crate::io::pattern(size);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        s.write_all(&buf)?;
    }
    drop(s);
    let (bytes, el) = rx
        .join()
        .map_err(|_| std::io::Error::other("receiver panicked"))??;
    Ok(bytes as f64 / el.as_secs_f64() / 1e6)
}

fn tcp_pingpong(secs: f64, size: usize) -> std::io::Result<(f64, u64)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; size];
        loop {
            if let Err(e) = s.read_exact(&mut buf) {
                return if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    Ok(())
                } else {
                    Err(e)
                };
            }
            s.write_all(&buf)?;
        }
    });
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let mut buf = vec![7u8; size];
    for _ in 0..1000 {
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
    }
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(secs);
    let mut n = 0u64;
    while Instant::now() < end {
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
        n += 1;
    }
    let el = t0.elapsed();
    drop(s);
    let _ = echo.join();
    Ok((el.as_secs_f64() * 1e6 / n as f64, n))
}

fn memcpy(secs: f64, size: usize) -> f64 {
    let src = crate::io::pattern(size);
    let mut dst = vec![0u8; size];
    dst.copy_from_slice(&src); // fault the pages in
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(secs);
    let mut bytes = 0u64;
    while Instant::now() < end {
        dst.copy_from_slice(&src);
        bytes += size as u64;
        std::hint::black_box(&dst);
    }
    bytes as f64 / t0.elapsed().as_secs_f64() / 1e6
}

/// Runs the three measurements.
pub fn run(a: &CeilingArgs) -> Result<Outcome> {
    let stream = tcp_stream(a.seconds, a.size as usize)?;
    let (rtt, n) = tcp_pingpong(a.seconds, a.ping_size)?;
    let copy = memcpy(a.seconds, a.copy_size as usize);
    let mut t = Table::new(&["ceiling", "value", "unit"]);
    t.row(vec![
        format!("loopback TCP stream, {} writes", fmt_size(a.size)),
        f(stream, 0),
        "MB/s".into(),
    ]);
    t.row(vec![
        format!("loopback TCP ping-pong, {} B", a.ping_size),
        f(rtt, 1),
        "µs round trip".into(),
    ]);
    t.row(vec![
        format!("memory copy, {} buffers", fmt_size(a.copy_size)),
        f(copy, 0),
        "MB/s".into(),
    ]);
    let mut md = String::from("\n### ceiling: this machine\n\n");
    md.push_str(&t.render());
    Ok(Outcome {
        params: json!({"seconds": a.seconds, "size": a.size, "ping_size": a.ping_size,
                       "copy_size": a.copy_size}),
        results: json!({"tcp_stream_mb_s": stream, "tcp_rtt_us": rtt, "tcp_rtt_round_trips": n,
                        "memcpy_mb_s": copy}),
        markdown: md,
    })
}
