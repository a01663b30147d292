//! Calls that wait behind others of their kind without holding a thread.
//!
//! Calls that may block run on a bounded pool of threads. When one file system stalls (a
//! device that stops answering for seconds), every call to it blocks, and enough of them hold
//! every thread, so that calls to other exports, and other clients, wait behind a device they
//! never touch. A program names the kind of a call before it runs ([`crate::Program::admission`]:
//! the export its file handle is on); the transport takes a permit of that kind first, and a
//! call that finds none waits for one as a task, holding no thread. Each kind has fewer
//! permits than there are threads, so some are always left for the others.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Semaphore;

/// Kinds kept at most (a program's keys are bounded, by the exports; this bounds a program
/// that would not).
const MAX_KINDS: usize = 4096;

/// Permits by kind of call.
#[derive(Debug)]
pub struct Admission {
    permits: usize,
    kinds: Mutex<HashMap<u64, Arc<Semaphore>>>,
}

impl Admission {
    /// At most `permits` calls of one kind run at once.
    pub fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// The permits of kind `key`; None past [`MAX_KINDS`] kinds (such a call is not held back).
    pub fn permits_of(&self, key: u64) -> Option<Arc<Semaphore>> {
        let mut k = self.kinds.lock();
        if let Some(s) = k.get(&key) {
            return Some(s.clone());
        }
        if k.len() >= MAX_KINDS {
            return None;
        }
        let s = Arc::new(Semaphore::new(self.permits));
        k.insert(key, s.clone());
        Some(s)
    }

    /// Permits each kind has.
    pub fn permits(&self) -> usize {
        self.permits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_own_permits_and_kinds_are_bounded() {
        let a = Admission::new(2);
        let s1 = a.permits_of(1).unwrap();
        let held: Vec<_> = (0..2)
            .map(|_| s1.clone().try_acquire_owned().unwrap())
            .collect();
        assert!(
            s1.clone().try_acquire_owned().is_err(),
            "a third call of kind 1"
        );
        assert!(a.permits_of(2).unwrap().try_acquire_owned().is_ok());
        assert!(Arc::ptr_eq(&s1, &a.permits_of(1).unwrap()));
        drop(held);
        assert!(s1.try_acquire_owned().is_ok());
        for k in 3..MAX_KINDS as u64 + 10 {
            let _ = a.permits_of(k);
        }
        assert!(a.permits_of(u64::MAX).is_none());
        assert!(a.permits_of(1).is_some(), "a known kind stays");
    }
}
