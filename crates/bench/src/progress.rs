//! A progress line on stderr for runs longer than two seconds.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

struct Inner {
    phase: Mutex<String>,
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
}

/// Shows the current phase and its completion; silent for the first two seconds.
pub struct Progress {
    inner: Arc<Inner>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts the indicator (a no-op when `quiet`).
    pub fn start(quiet: bool) -> Progress {
        let inner = Arc::new(Inner {
            phase: Mutex::new(String::new()),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let thread = (!quiet).then(|| {
            let i = inner.clone();
            std::thread::spawn(move || run(&i))
        });
        Progress { inner, thread }
    }

    /// Enters a phase with `total` units of work (0 when unknown).
    pub fn phase(&self, name: &str, total: u64) {
        *self.inner.phase.lock() = name.to_string();
        self.inner.done.store(0, Ordering::Relaxed);
        self.inner.total.store(total, Ordering::Relaxed);
    }

    /// Records `n` more units done.
    #[inline]
    pub fn add(&self, n: u64) {
        self.inner.done.fetch_add(n, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(i: &Inner) {
    let start = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut last_line = Instant::now();
    let mut shown = false;
    while !i.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let el = start.elapsed();
        if el < Duration::from_secs(2) {
            continue;
        }
        // On a terminal the line is redrawn twice a second; in a log, one line every 5 s.
        let every = if tty { 500 } else { 5000 };
        if last_line.elapsed() < Duration::from_millis(every) && shown {
            continue;
        }
        last_line = Instant::now();
        shown = true;
        let phase = i.phase.lock().clone();
        let done = i.done.load(Ordering::Relaxed);
        let total = i.total.load(Ordering::Relaxed);
        let pct = if total > 0 {
            format!(" {:3.0}%", (done as f64 * 100.0 / total as f64).min(100.0))
        } else {
            String::new()
        };
        let mut e = std::io::stderr().lock();
        if tty {
            let _ = write!(e, "\r\x1b[K[{:6.1}s] {phase}{pct}", el.as_secs_f64());
        } else {
            let _ = writeln!(e, "[{:6.1}s] {phase}{pct}", el.as_secs_f64());
        }
        let _ = e.flush();
    }
    if shown && tty {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}
