//! The threads that run calls which may block (a WRITE, a READ of data not cached).
//!
//! One queue under one lock, threads started on demand up to a maximum and kept until idle for
//! 10 s. A call queued while a thread is already running calls is left to that thread to take
//! after its own, not given a thread of its own: on two CPUs shared with the client a wake per
//! call cost more than the call (12 clients' 4 KiB FILE_SYNC WRITEs: 1.66 context switches and
//! 2.0 futex calls per WRITE with a wake each, 0.29 and 0.28 this way). What makes that safe
//! with calls that block: a call queued [`GROW_AFTER`] gets a thread of its own when a thread
//! next queues or takes one, and while any thread runs a call one sleeping thread (the watcher)
//! looks at the queue every [`WATCH_EVERY`], so a call waits at most about that long behind
//! threads stuck in I/O (a stalled disk holds up no other export's calls for more).
//!
//! A call's work may also wait for the next call of its connection when this thread runs it
//! next ([`later`]): the replies of a run of calls then leave in one write.
//!
//! By default threads never spin: one that looked for the next call for 50 µs before sleeping
//! lost 10 % on two CPUs, the spinning taking the client's and the reader's time. With busy
//! polling ([`CallPool::with_busy_poll`], rnfsd's `--tcp-busy-poll`) one thread at a time looks
//! for the next call before it sleeps, yielding the CPU to other threads as it looks.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex, MutexGuard};

/// How long an idle call thread waits for a call before it exits (tokio's blocking pool's).
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A call queued this long behind running calls gets a thread of its own.
pub const GROW_AFTER: Duration = Duration::from_micros(100);

/// How often the watcher looks at the queue while threads run calls.
pub const WATCH_EVERY: Duration = Duration::from_millis(1);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A queued job: when it came and what it belongs to (0: nothing in particular).
struct Queued {
    at: Instant,
    key: u64,
    job: Job,
}

thread_local! {
    /// The job this thread runs has another of its key queued right behind it.
    static NEXT_SAME: Cell<bool> = const { Cell::new(false) };
    /// What the running job left for after its key's run of jobs ([`later`]).
    static LATER: RefCell<Vec<Job>> = const { RefCell::new(Vec::new()) };
}

/// Whether the job running on this thread has another of its key (its connection's next
/// call) queued right behind it: what it would send now may wait for that one's.
pub fn next_is_same_key() -> bool {
    NEXT_SAME.with(Cell::get)
}

/// Runs `f` once the pool's threads are done with the running job's key for now: before a
/// job of another key, before a thread sleeps, or when it has waited [`GROW_AFTER`] (the
/// watcher sees to that while the next job is stuck in I/O). Right away when no job of the
/// key is queued behind the running one, or outside a pool.
pub fn later(f: impl FnOnce() + Send + 'static) {
    if !NEXT_SAME.with(Cell::get) {
        return f();
    }
    LATER.with(|l| l.borrow_mut().push(Box::new(f)));
}

/// A pool of call threads, started on demand up to a maximum, leaving after 10 s idle.
#[derive(Clone)]
pub struct CallPool {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    /// Sleeping threads wait here for a call (or to be made the watcher).
    wake: Condvar,
    /// The watcher waits here, for its timeout only.
    watch: Condvar,
    max: usize,
    /// A thread idle this long exits (a burst's threads do not stay for good).
    keep_alive: Duration,
    name: String,
    /// The runtime the threads run in, so that calls may spawn tasks and use its timers.
    runtime: Option<tokio::runtime::Handle>,
    on_start: Option<fn()>,
    /// How long a thread with nothing to do looks for the next call before it sleeps
    /// ([`CallPool::with_busy_poll`]); zero: it sleeps at once.
    busy_poll: Duration,
    /// Calls queued (the queue's length, for a polling thread to look at without the lock).
    queued: AtomicUsize,
}

struct State {
    /// [`GROW_AFTER`] (longer in tests that need an order).
    grow_after: Duration,
    jobs: VecDeque<Queued>,
    /// Threads waiting on `wake`.
    sleeping: usize,
    /// Of those, threads woken for a call and not yet running.
    woken: usize,
    /// Of those, one woken to be the watcher.
    watch_booked: bool,
    /// A thread waits on `watch`.
    watching: bool,
    /// A thread looks for the next call without sleeping: it takes the next one queued.
    polling: bool,
    /// Threads started so far.
    started: usize,
    /// Work left for later ([`later`]), since when the first waits, and the key of the run of
    /// jobs it waits for (the latest run's: another's work may go early, or wait for a job of
    /// another key, never longer than [`GROW_AFTER`] and the watcher's period).
    deferred: Vec<Job>,
    deferred_since: Option<Instant>,
    deferred_key: u64,
}

impl State {
    fn new(grow_after: Duration) -> Self {
        State {
            grow_after,
            jobs: VecDeque::new(),
            sleeping: 0,
            woken: 0,
            watch_booked: false,
            watching: false,
            polling: false,
            started: 0,
            deferred: Vec::new(),
            deferred_since: None,
            deferred_key: 0,
        }
    }

    /// Threads running a call or about to take one.
    fn awake(&self) -> usize {
        self.started - self.sleeping - usize::from(self.watching) + self.woken
    }

    /// Whether the first queued call has waited long enough for a thread of its own.
    fn head_late(&self, now: Instant) -> bool {
        self.jobs
            .front()
            .is_some_and(|q| now.saturating_duration_since(q.at) >= self.grow_after)
    }

    /// The deferred work when it is to run now: before a job of another key than `key` (None:
    /// nothing to run next), or late.
    fn deferred_due(&mut self, key: Option<u64>, now: Instant) -> Vec<Job> {
        let late = self
            .deferred_since
            .is_some_and(|t| now.saturating_duration_since(t) >= self.grow_after);
        let waits = key.is_some_and(|k| k != 0 && k == self.deferred_key);
        if self.deferred.is_empty() || (waits && !late) {
            return Vec::new();
        }
        self.deferred_since = None;
        std::mem::take(&mut self.deferred)
    }

    /// Each booked token (a call's, the watcher's) is a notify a sleeper will answer, so there
    /// are never more than sleepers: one over (a notify that found none) is dropped, the
    /// watcher's first (the next call queued books a watcher again; a job finds its thread in
    /// the one that left, which takes a queued call on its way out).
    fn settle_tokens(&mut self) {
        if self.woken + usize::from(self.watch_booked) > self.sleeping {
            if self.watch_booked {
                self.watch_booked = false;
            } else {
                self.woken -= 1;
            }
        }
    }

    /// Books a sleeping thread for the queue, or a new one (within `max`).
    fn more_threads(&mut self, max: usize) -> More {
        if self.sleeping > self.woken + usize::from(self.watch_booked) {
            self.woken += 1;
            More::Wake
        } else if self.started < max {
            self.started += 1;
            More::Start
        } else {
            More::Nothing
        }
    }

    /// Makes sure a watcher looks on while calls are queued behind running ones: books a
    /// sleeping thread to be it, or starts one.
    fn watched(&mut self, max: usize) -> More {
        if self.jobs.is_empty() || self.watching || self.watch_booked {
            return More::Nothing;
        }
        if self.sleeping > self.woken {
            self.watch_booked = true;
            More::Wake
        } else if self.started < max {
            // it takes a call or, finding none, watches
            self.started += 1;
            More::Start
        } else {
            More::Nothing
        }
    }
}

/// What to do about threads once the lock is let go.
enum More {
    /// Notify a sleeper: it answers the token booked (a call's, else the watcher's).
    Wake,
    Start,
    Nothing,
}

impl CallPool {
    /// A pool of at most `threads` threads (at least one) named `name`. Threads enter the
    /// current tokio runtime, if any (calls spawn tasks and use its timers), and run `on_start`
    /// first.
    pub fn new(name: &str, threads: usize, on_start: Option<fn()>) -> Self {
        CallPool {
            inner: Arc::new(Inner {
                state: Mutex::new(State::new(GROW_AFTER)),
                wake: Condvar::new(),
                watch: Condvar::new(),
                max: threads.max(1),
                keep_alive: KEEP_ALIVE,
                name: name.to_string(),
                runtime: tokio::runtime::Handle::try_current().ok(),
                on_start,
                busy_poll: Duration::ZERO,
                queued: AtomicUsize::new(0),
            }),
        }
    }

    /// The pool with one thread at a time looking for the next call for `budget` before it
    /// sleeps (a loop of `sched_yield`), so that a call coming meanwhile finds a thread
    /// awake: no wake, which costs tens of microseconds where the CPU is a VM's halted vCPU.
    /// Call it before the pool runs anything.
    pub fn with_busy_poll(mut self, budget: Duration) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.busy_poll = budget;
        }
        self
    }

    /// Runs `job` on one of the pool's threads: one already running calls takes it after its
    /// own unless it would wait too long; else a sleeping one, else a new one.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) {
        self.run_keyed(0, job)
    }

    /// [`CallPool::run`] for a job of `key` (a connection): see [`next_is_same_key`].
    pub fn run_keyed(&self, key: u64, job: impl FnOnce() + Send + 'static) {
        let now = Instant::now();
        let mut st = self.inner.state.lock();
        st.jobs.push_back(Queued {
            at: now,
            key,
            job: Box::new(job),
        });
        self.inner.queued.store(st.jobs.len(), Ordering::Release);
        let more = if st.polling && st.jobs.len() == 1 {
            More::Nothing // the polling thread takes it
        } else if st.awake() > 0 && !st.head_late(now) {
            st.watched(self.inner.max)
        } else {
            st.more_threads(self.inner.max)
        };
        drop(st);
        self.inner.apply(more);
    }

    #[cfg(test)]
    fn with_grow_after(name: &str, threads: usize, grow_after: Duration) -> Self {
        let p = Self::new(name, threads, None);
        p.inner.state.lock().grow_after = grow_after;
        p
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
    fn apply(self: &Arc<Self>, more: More) {
        match more {
            // a notify that found no sleeper (one left, idle, as it was booked) holds a token
            // nobody will take: drop one, so that the count of tokens stays within sleepers
            More::Wake => {
                if !self.wake.notify_one() {
                    self.state.lock().settle_tokens();
                }
            }
            More::Start => {
                let me = self.clone();
                let spawned = std::thread::Builder::new()
                    .name(self.name.clone())
                    .spawn(move || me.work());
                if let Err(e) = spawned {
                    // the queued call waits for a thread that finishes its own
                    self.state.lock().started -= 1;
                    tracing::warn!(error = %e, "cannot start a call thread");
                }
            }
            More::Nothing => {}
        }
    }

    fn work(self: Arc<Self>) {
        let _rt = self.runtime.as_ref().map(|h| h.enter());
        if let Some(f) = self.on_start {
            f();
        }
        let mut st = self.state.lock();
        // whether this thread takes the next queued call: the watcher leaves it to the
        // running threads while it has not waited too long
        let mut take = true;
        // woken to be the watcher
        let mut watch_next = false;
        // looked for a call (busy_poll) since the last one it took
        let mut polled = false;
        loop {
            let now = Instant::now();
            if let Some(q) = take.then(|| st.jobs.pop_front()).flatten() {
                self.queued.store(st.jobs.len(), Ordering::Release);
                polled = false;
                // the calls behind this one wait too long: another thread helps
                let grow = match st.head_late(now) {
                    true => st.more_threads(self.max),
                    false => More::Nothing,
                };
                let watched = st.watched(self.max);
                let due = st.deferred_due(Some(q.key), now);
                // work is left for the next call only when a watcher will run it if that call
                // is stuck (none with one thread, or all of them busy)
                let same = q.key != 0
                    && (st.watching || st.watch_booked)
                    && st.jobs.front().is_some_and(|n| n.key == q.key);
                if same {
                    st.deferred_key = q.key;
                }
                MutexGuard::unlocked(&mut st, || {
                    self.apply(grow);
                    self.apply(watched);
                    run_all(due);
                    NEXT_SAME.with(|n| n.set(same));
                    // a call that panics (a bug) loses its reply, not the pool its thread
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(q.job)).is_err() {
                        tracing::error!("a call panicked on a call thread");
                    }
                    NEXT_SAME.with(|n| n.set(false));
                });
                let left = LATER.with(|l| std::mem::take(&mut *l.borrow_mut()));
                if !left.is_empty() {
                    st.deferred_since.get_or_insert(now);
                    st.deferred.extend(left);
                }
                continue;
            }
            // nothing taken: what was left for later goes now (the watcher: when late)
            let key = if take { None } else { Some(st.deferred_key) };
            let due = st.deferred_due(key, now);
            if !due.is_empty() {
                MutexGuard::unlocked(&mut st, || run_all(due));
                continue;
            }
            // while others run calls one thread watches, on a timer
            if !st.watching && (watch_next || st.awake() > 1) {
                watch_next = false;
                st.watching = true;
                self.watch.wait_for(&mut st, WATCH_EVERY);
                st.watching = false;
                // alone now, or calls queued too long: take one
                take = st.awake() == 1 || st.head_late(Instant::now());
                continue;
            }
            if !self.busy_poll.is_zero() && !polled && !st.polling {
                polled = true;
                st.polling = true;
                MutexGuard::unlocked(&mut st, || self.poll_for_job());
                st.polling = false;
                take = true;
                continue;
            }
            st.sleeping += 1;
            let timed_out = self.wake.wait_for(&mut st, self.keep_alive).timed_out();
            st.sleeping -= 1;
            take = true;
            if timed_out {
                // a token booked as this thread left was meant for no one
                st.settle_tokens();
                if st.jobs.is_empty() {
                    st.started -= 1;
                    return;
                }
            } else if st.woken > 0 {
                st.woken -= 1;
            } else if st.watch_booked {
                st.watch_booked = false;
                watch_next = true;
                take = false;
            }
        }
    }
}

impl Inner {
    /// Until a call is queued or `busy_poll` has passed, yields the CPU to its other threads.
    fn poll_for_job(&self) {
        let until = Instant::now() + self.busy_poll;
        while self.queued.load(Ordering::Acquire) == 0 && Instant::now() < until {
            std::thread::yield_now();
        }
    }
}

/// Runs deferred work, each piece caught like a job.
fn run_all(jobs: Vec<Job>) {
    for j in jobs {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(j)).is_err() {
            tracing::error!("deferred work panicked on a call thread");
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

    /// Starts `n` threads and waits until all sleep again.
    fn warm(pool: &CallPool, n: usize) {
        let all = Arc::new(Barrier::new(n));
        for _ in 0..n {
            let all = all.clone();
            pool.run(move || {
                all.wait();
            });
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.inner.state.lock().sleeping < n {
            assert!(
                std::time::Instant::now() < deadline,
                "threads went to sleep"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_job_queued_behind_a_stuck_one_gets_a_thread_of_its_own() {
        let pool = CallPool::new("t", 4, None);
        warm(&pool, 4);
        let (release, stuck) = mpsc::channel::<()>();
        pool.run(move || {
            let _ = stuck.recv();
        });
        // the second is left to the running thread while a watcher looks on; that thread
        // does not come back, so the watcher gives it a thread
        let (tx, rx) = mpsc::channel();
        pool.run(move || tx.send(()).unwrap());
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the job behind a stuck one ran");
        release.send(()).unwrap();
    }

    #[test]
    fn later_work_waits_for_the_next_job_of_its_key_and_runs_before_sleep() {
        // two threads, the second watching: the two jobs of key 7 run in a row on the first
        // (no job waits long enough here for the watcher to take it)
        let pool = CallPool::with_grow_after("t", 2, Duration::from_secs(30));
        warm(&pool, 2);
        let (gate_tx, gate) = mpsc::channel::<()>();
        pool.run(move || {
            let _ = gate.recv();
        });
        let (tx, rx) = mpsc::channel();
        let (t1, t2) = (tx.clone(), tx.clone());
        pool.run_keyed(7, move || {
            assert!(next_is_same_key());
            later(move || t1.send("later").unwrap());
        });
        pool.run_keyed(7, move || {
            assert!(!next_is_same_key());
            t2.send("next").unwrap();
        });
        gate_tx.send(()).unwrap();
        let got: Vec<_> = (0..2)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("ran"))
            .collect();
        assert_eq!(got, ["next", "later"]);
        // outside a pool (or with no job of its key behind), later() runs at once
        later(move || tx.send("now").unwrap());
        assert_eq!(rx.try_recv(), Ok("now"));
    }

    #[test]
    fn no_work_is_left_for_later_without_a_watcher() {
        // one thread: nobody could run it while the next job is stuck
        let pool = CallPool::new("t", 1, None);
        let (gate_tx, gate) = mpsc::channel::<()>();
        pool.run(move || {
            let _ = gate.recv();
        });
        let (tx, rx) = mpsc::channel();
        pool.run_keyed(7, move || tx.send(next_is_same_key()).unwrap());
        pool.run_keyed(7, || {});
        gate_tx.send(()).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(false));
    }

    #[test]
    fn tokens_never_outnumber_sleepers() {
        let mut st = State::new(GROW_AFTER);
        st.sleeping = 1;
        st.woken = 1;
        st.watch_booked = true;
        st.settle_tokens();
        assert_eq!(
            (st.woken, st.watch_booked),
            (1, false),
            "the watcher's goes first"
        );
        st.sleeping = 0;
        st.settle_tokens();
        assert_eq!(st.woken, 0);
        st.settle_tokens();
        assert_eq!(st.woken, 0);
    }

    #[test]
    fn later_work_runs_while_the_next_job_of_its_key_is_stuck() {
        let pool = CallPool::new("t", 4, None);
        warm(&pool, 4);
        let (gate_tx, gate) = mpsc::channel::<()>();
        pool.run(move || {
            let _ = gate.recv();
        });
        let (tx, rx) = mpsc::channel();
        let (release, stuck) = mpsc::channel::<()>();
        let t1 = tx.clone();
        pool.run_keyed(7, move || later(move || t1.send("later").unwrap()));
        pool.run_keyed(7, move || {
            let _ = stuck.recv();
            tx.send("stuck one done").unwrap();
        });
        gate_tx.send(()).unwrap();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok("later"),
            "the work left for later waited for a stuck job"
        );
        release.send(()).unwrap();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)),
            Ok("stuck one done")
        );
    }

    /// Waits (up to 10 s) until `f` holds of the pool's state.
    fn until(pool: &CallPool, f: impl Fn(&State) -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if f(&pool.inner.state.lock()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_thread_with_busy_poll_takes_the_next_call_while_it_polls_then_sleeps() {
        let pool = CallPool::new("t-poll", 4, None).with_busy_poll(Duration::from_secs(5));
        let (tx, rx) = mpsc::channel();
        let t = tx.clone();
        pool.run(move || t.send(std::thread::current().id()).unwrap());
        let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        // done with its call, the thread polls: it is neither asleep nor woken for the next
        assert!(until(&pool, |st| st.polling && st.sleeping == 0));
        let t = tx.clone();
        pool.run(move || t.send(std::thread::current().id()).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), first);
        let st = pool.inner.state.lock();
        assert_eq!((st.started, st.woken, st.watch_booked), (1, 0, false));
        drop(st);

        // with a short budget it polls once after a call, then sleeps until woken
        let pool = CallPool::new("t-poll2", 4, None).with_busy_poll(Duration::from_millis(20));
        let t = tx.clone();
        pool.run(move || t.send(std::thread::current().id()).unwrap());
        let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(until(&pool, |st| !st.polling && st.sleeping == 1));
        let t = tx.clone();
        pool.run(move || t.send(std::thread::current().id()).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), first);
    }
}
