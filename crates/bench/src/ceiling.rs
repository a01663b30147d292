//! Physical ceilings of the machine, measured in the same run as the servers: a loopback TCP
//! stream (the most a READ stream can carry), a file read into a buffer and written to a
//! loopback TCP stream (the most a server that copies file data into its socket can send), a
//! loopback TCP ping-pong (the least a round trip can take), what waking a sleeping thread
//! costs on the same CPU and on another (on a virtual machine the other's vCPU halts into the
//! hypervisor) and memory-copy bandwidth.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;
use sunrpc::bufpool::PageAligned;

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
    /// Directory of the file the file stream reads (put it on the exports' file system);
    /// repeatable, one file stream per directory (the first gives `file_stream_mb_s`).
    #[arg(long)]
    pub file_dir: Vec<PathBuf>,
    /// Size of that file (read once, like the sequential-read mode reads its file).
    #[arg(long, default_value = "256m", value_parser = parse_size)]
    pub file_size: u64,
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

/// A loopback TCP connection whose receiving end counts what arrives, timed from the first
/// byte: `send` writes into the sending end; returns the bytes received and MB/s.
fn tcp_receive_rate(
    size: usize,
    send: impl FnOnce(&mut TcpStream) -> std::io::Result<()>,
) -> std::io::Result<(u64, f64)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let rx = std::thread::spawn(move || -> std::io::Result<(u64, u64, Duration)> {
        let (mut s, _) = l.accept()?;
        let mut page = PageAligned::new(size);
        let buf = page.as_mut_slice();
        let mut total = 0u64;
        // The clock starts at the first byte received.
        let n = s.read(buf)?;
        let t0 = Instant::now();
        total += n as u64;
        loop {
            let n = s.read(buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        Ok((total, total - n as u64, t0.elapsed()))
    });
    let mut s = TcpStream::connect(addr)?;
    let sent = send(&mut s);
    drop(s);
    let (total, timed, el) = rx
        .join()
        .map_err(|_| std::io::Error::other("receiver panicked"))??;
    sent?;
    Ok((total, timed as f64 / el.as_secs_f64() / 1e6))
}

/// One buffer written over and over for `secs`.
fn tcp_stream(secs: f64, size: usize) -> std::io::Result<f64> {
    let buf = crate::io::pattern(size);
    tcp_receive_rate(size, |s| {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            s.write_all(&buf)?;
        }
        Ok(())
    })
    .map(|(_, rate)| rate)
}

/// A file of `file_size` bytes in `dir`, written (so its pages are cached, as after the
/// sequential-read mode's writes) and then read once in `size` records with `pread`, each
/// written to the stream: the copies a server makes that reads into a buffer and sends it.
/// Returns the bytes received and MB/s.
fn file_stream(dir: &Path, file_size: u64, size: usize) -> std::io::Result<(u64, f64)> {
    let path = dir.join(format!("rnfs-bench.ceiling.{}", std::process::id()));
    let run = || -> std::io::Result<(u64, f64)> {
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let pat = crate::io::pattern(size);
        let mut off = 0u64;
        while off < file_size {
            let n = (file_size - off).min(size as u64) as usize;
            f.write_all_at(&pat[..n], off)?;
            off += n as u64;
        }
        let mut page = PageAligned::new(size);
        let buf = page.as_mut_slice();
        tcp_receive_rate(size, |s| {
            let mut off = 0u64;
            while off < file_size {
                let n = f.read_at(buf, off)?;
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n])?;
                off += n as u64;
            }
            Ok(())
        })
    };
    let r = run();
    let _ = std::fs::remove_file(&path);
    r
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
    let mut page = PageAligned::new(size);
    let dst = page.as_mut_slice();
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

/// What waking a sleeping thread costs, from a thread on one CPU to a thread that sleeps on
/// `to` (reading a pipe): the waker's CPU time per wake (its `write`), and the time from just
/// before the write until the woken thread runs, in µs. Wakes are 200 µs apart, so that the
/// sleeper's CPU, when it is another, has gone idle: on a virtual machine its vCPU has halted
/// into the hypervisor, and a wake is an interrupt sent through it.
fn wake_cost(secs: f64, from: usize, to: usize) -> std::io::Result<(f64, f64)> {
    use rustix::thread::{sched_setaffinity, CpuSet};
    fn pin(cpu: usize) -> std::io::Result<()> {
        let mut set = CpuSet::new();
        set.set(cpu);
        sched_setaffinity(None, &set).map_err(std::io::Error::from)
    }
    fn thread_cpu() -> Duration {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
    let (rd, wr) = rustix::pipe::pipe().map_err(std::io::Error::from)?;
    let base = Instant::now();
    let sleeper = std::thread::spawn(move || -> std::io::Result<(Duration, u64)> {
        pin(to)?;
        let (mut waited, mut n) = (Duration::ZERO, 0u64);
        let mut msg = [0u8; 8];
        loop {
            let got = rustix::io::read(&rd, &mut msg).map_err(std::io::Error::from)?;
            let sent = u64::from_ne_bytes(msg);
            if got != 8 || sent == u64::MAX {
                return Ok((waited, n));
            }
            waited += base.elapsed().saturating_sub(Duration::from_nanos(sent));
            n += 1;
        }
    });
    let waker = std::thread::spawn(move || -> std::io::Result<(Duration, u64)> {
        pin(from)?;
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let (mut cpu, mut n) = (Duration::ZERO, 0u64);
        while Instant::now() < end {
            std::thread::sleep(Duration::from_micros(200));
            let c0 = thread_cpu();
            let sent = base.elapsed().as_nanos() as u64;
            rustix::io::write(&wr, &sent.to_ne_bytes()).map_err(std::io::Error::from)?;
            cpu += thread_cpu().saturating_sub(c0);
            n += 1;
        }
        rustix::io::write(&wr, &u64::MAX.to_ne_bytes()).map_err(std::io::Error::from)?;
        Ok((cpu, n))
    });
    let joined = |h: std::thread::JoinHandle<std::io::Result<(Duration, u64)>>| {
        h.join()
            .map_err(|_| std::io::Error::other("wake thread panicked"))?
    };
    let (cpu, sent) = joined(waker)?;
    let (waited, woken) = joined(sleeper)?;
    let per = |d: Duration, n: u64| d.as_secs_f64() * 1e6 / n.max(1) as f64;
    Ok((per(cpu, sent), per(waited, woken)))
}

/// The CPUs this thread may run on, lowest first.
fn cpus() -> Vec<usize> {
    let set =
        rustix::thread::sched_getaffinity(None).unwrap_or_else(|_| rustix::thread::CpuSet::new());
    (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .collect()
}

/// Runs the measurements.
pub fn run(a: &CeilingArgs) -> Result<Outcome> {
    let stream = tcp_stream(a.seconds, a.size as usize)?;
    let dirs = match a.file_dir.is_empty() {
        true => vec![std::env::temp_dir()],
        false => a.file_dir.clone(),
    };
    let mut files = Vec::with_capacity(dirs.len());
    for dir in &dirs {
        let (_, rate) = file_stream(dir, a.file_size, a.size as usize)
            .map_err(|e| crate::err!("file stream in {}: {e}", dir.display()))?;
        files.push(rate);
    }
    let (rtt, n) = tcp_pingpong(a.seconds, a.ping_size)?;
    let copy = memcpy(a.seconds, a.copy_size as usize);
    // a few thousand wakes each; another CPU only where there is one
    let cpus = cpus();
    let first = cpus.first().copied().unwrap_or(0);
    let wake_secs = a.seconds.min(0.5);
    let same = wake_cost(wake_secs, first, first)?;
    let other = match cpus.get(1) {
        Some(&second) => Some(wake_cost(wake_secs, first, second)?),
        None => None,
    };
    let mut t = Table::new(&["ceiling", "value", "unit"]);
    t.row(vec![
        format!("loopback TCP stream, {} writes", fmt_size(a.size)),
        f(stream, 0),
        "MB/s".into(),
    ]);
    for (dir, rate) in dirs.iter().zip(&files) {
        t.row(vec![
            format!(
                "{} file in {}, read once with pread into a {} buffer, written to a loopback TCP stream",
                fmt_size(a.file_size),
                dir.display(),
                fmt_size(a.size)
            ),
            f(*rate, 0),
            "MB/s".into(),
        ]);
    }
    t.row(vec![
        format!("loopback TCP ping-pong, {} B", a.ping_size),
        f(rtt, 1),
        "µs round trip".into(),
    ]);
    for (what, cost) in [("on the same CPU", Some(same)), ("on another CPU", other)] {
        let Some((waker, latency)) = cost else {
            continue;
        };
        t.row(vec![
            format!("a thread sleeping {what} woken (pipe): the waker's CPU"),
            f(waker, 1),
            "µs per wake".into(),
        ]);
        t.row(vec![
            "the same: from the wake until the woken thread runs".into(),
            f(latency, 1),
            "µs".into(),
        ]);
    }
    t.row(vec![
        format!("memory copy, {} buffers", fmt_size(a.copy_size)),
        f(copy, 0),
        "MB/s".into(),
    ]);
    let mut md = String::from("\n### ceiling: this machine\n\n");
    md.push_str(&t.render());
    Ok(Outcome {
        params: json!({"seconds": a.seconds, "size": a.size, "ping_size": a.ping_size,
                       "copy_size": a.copy_size, "file_size": a.file_size,
                       "file_dir": dirs[0].display().to_string()}),
        results: json!({"tcp_stream_mb_s": stream, "file_stream_mb_s": files[0],
                        "file_streams": dirs.iter().zip(&files)
                            .map(|(d, r)| json!({"dir": d.display().to_string(), "mb_s": r}))
                            .collect::<Vec<_>>(),
                        "tcp_rtt_us": rtt, "tcp_rtt_round_trips": n, "memcpy_mb_s": copy,
                        "wake_same_cpu_waker_us": same.0, "wake_same_cpu_latency_us": same.1,
                        "wake_other_cpu_waker_us": other.map(|o| o.0),
                        "wake_other_cpu_latency_us": other.map(|o| o.1)}),
        markdown: md,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_stream_sends_the_whole_file_and_removes_it() {
        let dir =
            std::env::temp_dir().join(format!("rnfs-bench-ceiling-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test dir");
        // a size that is not a multiple of the record size: the last record is short
        let size = 3 * 65536 + 5;
        let (bytes, rate) = file_stream(&dir, size, 65536).expect("file stream");
        assert_eq!(bytes, size);
        assert!(rate.is_finite() && rate > 0.0, "rate {rate}");
        let left: Vec<_> = std::fs::read_dir(&dir).expect("read dir").collect();
        assert!(left.is_empty(), "file left behind: {left:?}");
        std::fs::remove_dir(&dir).expect("remove test dir");
    }

    #[test]
    fn every_file_dir_gets_its_own_file_stream_the_first_also_under_the_old_key() {
        let base =
            std::env::temp_dir().join(format!("rnfs-bench-ceiling-dirs-{}", std::process::id()));
        let dirs = [base.join("a"), base.join("b")];
        for d in &dirs {
            std::fs::create_dir_all(d).expect("test dir");
        }
        let out = run(&CeilingArgs {
            seconds: 0.05,
            size: 65536,
            file_dir: dirs.to_vec(),
            file_size: 4 * 65536,
            ping_size: 64,
            copy_size: 65536,
            json: None,
        })
        .expect("ceiling run");
        let streams = out.results["file_streams"]
            .as_array()
            .expect("file_streams");
        assert_eq!(streams.len(), 2);
        for (s, d) in streams.iter().zip(&dirs) {
            assert_eq!(s["dir"], d.display().to_string());
            assert!(s["mb_s"].as_f64().is_some_and(|r| r > 0.0), "{s}");
        }
        assert_eq!(out.results["file_stream_mb_s"], streams[0]["mb_s"]);
        assert!(out.markdown.contains(&*dirs[1].display().to_string()));
        for k in ["wake_same_cpu_waker_us", "wake_same_cpu_latency_us"] {
            assert!(
                out.results[k].as_f64().is_some_and(|v| v > 0.0),
                "{k}: {}",
                out.results[k]
            );
        }
        std::fs::remove_dir_all(&base).expect("remove test dirs");
    }
}
