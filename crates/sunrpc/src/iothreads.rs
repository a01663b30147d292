//! Threads that serve connections: each runs a single-threaded runtime of its own, and a
//! connection stays on the thread it was given, with its reader, its writer task and its timers.
//!
//! On a work-stealing runtime a worker that finds more ready tasks than it can run at once wakes
//! another to take some, and a thread woken on another CPU costs a cross-CPU interrupt: on a
//! virtual machine about 17 µs of the waker's CPU and 50-100 µs before the woken one runs
//! (docs/benchmarks.md, "Connection threads and 4 KiB random reads"). Connections spread over
//! threads that never hand work to each other pay that only where a call goes to a call thread.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::Notify;

/// A fixed set of connection threads; cloning shares them. The threads end when the last clone
/// is dropped, and the connections they serve with them.
#[derive(Clone)]
pub struct IoThreads {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for IoThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoThreads")
            .field("loads", &self.loads())
            .finish()
    }
}

struct Inner {
    threads: Vec<IoThread>,
    /// Where the search for the least loaded thread starts: ties go round.
    next: AtomicUsize,
}

struct IoThread {
    handle: Handle,
    /// Connections (tasks given with [`IoThreads::spawn`]) on this thread now.
    load: Arc<AtomicUsize>,
    /// Ends the thread.
    stop: Arc<Notify>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in &self.threads {
            t.stop.notify_one();
        }
    }
}

/// Counts a connection on its thread for as long as its task lives.
struct Load(Arc<AtomicUsize>);

impl Drop for Load {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl IoThreads {
    /// `n` threads (at least one) named `name`, each running `on_start` first.
    pub fn new(name: &str, n: usize, on_start: Option<fn()>) -> io::Result<Self> {
        let mut threads = Vec::with_capacity(n.max(1));
        // each thread says when it runs, so that the threads are there (and named) once this
        // returns, before the server says it is ready
        let (started, running) = std::sync::mpsc::channel();
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let handle = rt.handle().clone();
            let stop = Arc::new(Notify::new());
            let end = stop.clone();
            let started = started.clone();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    if let Some(f) = on_start {
                        f();
                    }
                    let _ = started.send(());
                    drop(started);
                    rt.block_on(end.notified());
                })?;
            threads.push(IoThread {
                handle,
                load: Arc::new(AtomicUsize::new(0)),
                stop,
            });
        }
        drop(started);
        for _ in 0..threads.len() {
            running
                .recv()
                .map_err(|_| io::Error::other("a connection thread ended at its start"))?;
        }
        Ok(IoThreads {
            inner: Arc::new(Inner {
                threads,
                next: AtomicUsize::new(0),
            }),
        })
    }

    /// Runs `task` (a connection) on the thread with the fewest connections; the future is
    /// first polled there, so sockets it registers belong to that thread's runtime.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let ts = &self.inner.threads;
        let start = self.inner.next.fetch_add(1, Ordering::Relaxed) % ts.len();
        let t = (0..ts.len())
            .map(|k| &ts[(start + k) % ts.len()])
            .min_by_key(|t| t.load.load(Ordering::Acquire))
            .unwrap_or(&ts[start]);
        t.load.fetch_add(1, Ordering::AcqRel);
        let load = Load(t.load.clone());
        t.handle.spawn(async move {
            let _load = load;
            task.await;
        });
    }

    /// Connections on each thread now, in thread order.
    pub fn loads(&self) -> Vec<usize> {
        let ts = &self.inner.threads;
        ts.iter().map(|t| t.load.load(Ordering::Acquire)).collect()
    }

    /// Waits until no thread has a connection left; panics after 10 s.
    #[cfg(test)]
    pub(crate) fn wait_idle(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.loads().iter().any(|&n| n > 0) {
            assert!(
                std::time::Instant::now() < deadline,
                "loads {:?}",
                self.loads()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

impl crate::metrics::MetricsSource for IoThreads {
    fn encode(&self, out: &mut crate::metrics::MetricsOut<'_>) -> std::fmt::Result {
        out.gauges(
            "rnfs_tcp_thread_connections",
            "TCP connections each TCP thread serves (--tcp-threads): an uneven spread shows here.",
            self.loads()
                .into_iter()
                .enumerate()
                .map(|(i, n)| ([("thread", i.to_string())], n as u64)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn the_threads_run_and_have_their_names_once_made() {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        fn slow_start() {
            std::thread::sleep(Duration::from_millis(50));
            STARTED.fetch_add(1, Ordering::AcqRel);
        }
        let _t = IoThreads::new("iot-up", 3, Some(slow_start)).unwrap();
        assert_eq!(
            STARTED.load(Ordering::Acquire),
            3,
            "on_start ran on every thread"
        );
        let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_string())
            .filter(|n| n.starts_with("iot-up-"))
            .collect();
        names.sort();
        assert_eq!(names, ["iot-up-0", "iot-up-1", "iot-up-2"]);
    }

    #[test]
    fn tasks_go_to_the_least_loaded_thread_and_run_there() {
        thread_local!(static MARK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        fn mark() {
            MARK.with(|m| m.set(true));
        }
        let t = IoThreads::new("iot", 2, Some(mark)).unwrap();
        let (tx, rx) = mpsc::channel();
        let (hold_tx, hold_rx) = tokio::sync::watch::channel(false);
        for _ in 0..4 {
            let tx = tx.clone();
            let mut hold = hold_rx.clone();
            t.spawn(async move {
                let name = std::thread::current().name().map(str::to_string);
                tx.send((name, MARK.with(|m| m.get()))).unwrap();
                let _ = hold.wait_for(|h| *h).await;
            });
        }
        let mut names = Vec::new();
        for _ in 0..4 {
            let (name, marked) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(marked, "on_start ran on the thread");
            names.push(name.unwrap());
        }
        names.sort();
        assert_eq!(names, ["iot-0", "iot-0", "iot-1", "iot-1"]);
        assert_eq!(t.loads(), [2, 2]);
        hold_tx.send(true).unwrap();
        t.wait_idle();
    }

    #[test]
    fn threads_end_with_the_last_clone() {
        let t = IoThreads::new("iot-end", 1, None).unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        t.spawn(async move {
            // never finishes: dropped with the runtime, which drops the sender
            let _tx = tx;
            std::future::pending::<()>().await;
        });
        drop(t);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
    }
}
