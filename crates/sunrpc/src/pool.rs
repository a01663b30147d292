//! The threads that run calls which may block (a WRITE, a READ of data not cached).
//!
//! One queue under one lock and one condition variable, threads started on demand up to a
//! maximum and kept until idle for 10 s: a hand-off is a push and, when a thread sleeps, one wake. tokio's blocking
//! pool, which ran these calls before, makes a task with a join handle for each and its idle
//! threads wait with a timeout to exit; 12 clients' 4 KiB FILE_SYNC WRITEs on one connection
//! took 3.4 context switches and 3.6 futex calls each on it, 1.4 and 1.4 here, and 10 % less
//! server CPU (docs/benchmarks.md). A thread that looked for the next call for a while before
//! sleeping (50 µs) lost 10 % on two CPUs, the spinning taking the client's and the reader's
//! time: not done.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

/// How long an idle call thread waits for a call before it exits (tokio's blocking pool's).
const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A pool of call threads, started on demand up to a maximum, leaving after 10 s idle.
#[derive(Clone)]
pub struct CallPool {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    wake: Condvar,
    max: usize,
    /// A thread idle this long exits (a burst's threads do not stay for good).
    keep_alive: Duration,
    name: String,
    /// The runtime the threads run in, so that calls may spawn tasks and use its timers.
    runtime: Option<tokio::runtime::Handle>,
    on_start: Option<fn()>,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    sleeping: usize,
    /// Threads started so far.
    started: usize,
}

impl CallPool {
    /// A pool of at most `threads` threads (at least one) named `name`. Threads enter the
    /// current tokio runtime, if any (calls spawn tasks and use its timers), and run `on_start`
    /// first.
    pub fn new(name: &str, threads: usize, on_start: Option<fn()>) -> Self {
        CallPool {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                max: threads.max(1),
                keep_alive: KEEP_ALIVE,
                name: name.to_string(),
                runtime: tokio::runtime::Handle::try_current().ok(),
                on_start,
            }),
        }
    }

    /// Runs `job` on one of the pool's threads: a sleeping one, else a new one, else the first
    /// to finish its call.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) {
        let mut st = self.inner.state.lock();
        st.jobs.push_back(Box::new(job));
        if st.sleeping > st.jobs.len() - 1 {
            drop(st);
            self.inner.wake.notify_one();
        } else if st.started < self.inner.max {
            st.started += 1;
            drop(st);
            self.start_thread();
        }
    }

    fn start_thread(&self) {
        let inner = self.inner.clone();
        let spawned = std::thread::Builder::new()
            .name(inner.name.clone())
            .spawn(move || inner.work());
        if let Err(e) = spawned {
            // the queued job waits for a thread that finishes its call
            self.inner.state.lock().started -= 1;
            tracing::warn!(error = %e, "cannot start a call thread");
        }
    }

    #[cfg(test)]
    fn with_keep_alive(name: &str, threads: usize, keep_alive: Duration) -> Self {
        let mut p = Self::new(name, threads, None);
        if let Some(inner) = Arc::get_mut(&mut p.inner) {
            inner.keep_alive = keep_alive;
        }
        p
    }

    /// Threads started so far.
    pub fn threads(&self) -> usize {
        self.inner.state.lock().started
    }
}

impl Inner {
    fn work(&self) {
        let _rt = self.runtime.as_ref().map(|h| h.enter());
        if let Some(f) = self.on_start {
            f();
        }
        let mut st = self.state.lock();
        loop {
            match st.jobs.pop_front() {
                Some(job) => MutexGuard::unlocked(&mut st, || {
                    // a call that panics (a bug) loses its reply, not the pool its thread
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                        tracing::error!("a call panicked on a call thread");
                    }
                }),
                None => {
                    st.sleeping += 1;
                    let idle = self.wake.wait_for(&mut st, self.keep_alive).timed_out();
                    st.sleeping -= 1;
                    if idle && st.jobs.is_empty() {
                        st.started -= 1;
                        return;
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for CallPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPool")
            .field("name", &self.inner.name)
            .field("max", &self.inner.max)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::mpsc;
    use std::sync::Barrier;
    use std::time::Duration;

    /// Runs four jobs that each wait for all four: they finish only if they run together.
    fn run_four_together(pool: &CallPool, tx: &mpsc::Sender<()>, rx: &mpsc::Receiver<()>) {
        let all = Arc::new(Barrier::new(4));
        for _ in 0..4 {
            let (all, tx) = (all.clone(), tx.clone());
            pool.run(move || {
                all.wait();
                tx.send(()).unwrap();
            });
        }
        for _ in 0..4 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("jobs ran together");
        }
    }

    #[test]
    fn jobs_run_at_once_on_up_to_max_threads() {
        let pool = CallPool::new("t", 4, None);
        let (tx, rx) = mpsc::channel();
        run_four_together(&pool, &tx, &rx);
        assert_eq!(pool.threads(), 4);
    }

    #[test]
    fn jobs_beyond_the_threads_wait_for_one_and_all_run() {
        let pool = CallPool::new("t", 2, None);
        let (tx, rx) = mpsc::channel();
        for i in 0..50 {
            let tx = tx.clone();
            pool.run(move || {
                std::thread::sleep(Duration::from_millis(1));
                tx.send((i, std::thread::current().id())).unwrap();
            });
        }
        let mut seen = HashSet::new();
        let mut threads = HashSet::new();
        for _ in 0..50 {
            let (i, t) = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("every job runs");
            seen.insert(i);
            threads.insert(t);
        }
        assert_eq!(seen.len(), 50);
        assert!(
            threads.len() <= 2,
            "{} threads for a pool of 2",
            threads.len()
        );
        assert_eq!(pool.threads(), 2);
    }

    #[test]
    fn a_job_that_panics_leaves_its_thread_to_the_next() {
        let pool = CallPool::new("t", 1, None);
        pool.run(|| panic!("a call's bug"));
        let (tx, rx) = mpsc::channel();
        pool.run(move || tx.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the next job runs");
        assert_eq!(pool.threads(), 1);
    }

    #[test]
    fn an_idle_thread_is_woken_for_the_next_job() {
        let pool = CallPool::new("t", 8, None);
        let (tx, rx) = mpsc::channel();
        for _ in 0..3 {
            let tx = tx.clone();
            pool.run(move || tx.send(()).unwrap());
            rx.recv_timeout(Duration::from_secs(10)).expect("job ran");
            // the thread is asleep again before the next job comes
            while pool.inner.state.lock().sleeping == 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(
            pool.threads(),
            1,
            "a sleeping thread is reused, no new one started"
        );
    }

    #[test]
    fn idle_threads_exit_and_new_ones_start_for_later_calls() {
        let pool = CallPool::with_keep_alive("t", 4, Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        run_four_together(&pool, &tx, &rx);
        assert_eq!(pool.threads(), 4);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.threads() > 0 {
            assert!(std::time::Instant::now() < deadline, "idle threads stay");
            std::thread::sleep(Duration::from_millis(10));
        }
        pool.run(move || tx.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a later call runs");
    }

    #[test]
    fn threads_run_in_the_runtime_and_start_with_on_start() {
        thread_local!(static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        fn mark() {
            STARTED.with(|s| s.set(true));
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let pool = rt.block_on(async { CallPool::new("t", 1, Some(mark)) });
        let (tx, rx) = mpsc::channel();
        pool.run(move || {
            let in_rt = tokio::runtime::Handle::try_current().is_ok();
            tx.send((in_rt, STARTED.with(|s| s.get()))).unwrap();
        });
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            (true, true)
        );
    }
}
