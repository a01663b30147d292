//! The sequence window of a context (RFC 2203 section 5.3.3.1): a call whose sequence number
//! is below the window or already seen inside it is a replay, dropped without an answer.

/// Sequence numbers remembered behind the highest one seen (knfsd's GSS_SEQ_WIN).
pub const SEQ_WINDOW: u32 = 128;

/// The highest sequence number seen and which of the [`SEQ_WINDOW`] below it were.
#[derive(Debug, Clone, Default)]
pub struct SeqWindow {
    /// Highest number seen; meaningless until `started`.
    top: u32,
    /// Bit i set: `top - i` was seen.
    seen: u128,
    started: bool,
}

/// What the window says of a sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqCheck {
    /// First time seen, inside or above the window: the call runs.
    Fresh,
    /// Below the window, or seen before: dropped.
    Replay,
}

impl SeqWindow {
    /// What [`SeqWindow::check`] would say of `seq`, without recording it.
    pub fn peek(&self, seq: u32) -> SeqCheck {
        if !self.started || seq > self.top {
            return SeqCheck::Fresh;
        }
        let back = self.top - seq;
        if back >= SEQ_WINDOW || self.seen & (1u128 << back) != 0 {
            return SeqCheck::Replay;
        }
        SeqCheck::Fresh
    }

    /// Records `seq` and says whether the call may run. The client sends numbers out of order
    /// (many calls in flight), so any unseen number inside the window is taken.
    pub fn check(&mut self, seq: u32) -> SeqCheck {
        if !self.started {
            self.started = true;
            self.top = seq;
            self.seen = 1;
            return SeqCheck::Fresh;
        }
        if seq > self.top {
            let shift = seq - self.top;
            self.seen = if shift >= SEQ_WINDOW {
                0
            } else {
                self.seen << shift
            };
            self.seen |= 1;
            self.top = seq;
            return SeqCheck::Fresh;
        }
        let back = self.top - seq;
        if back >= SEQ_WINDOW {
            return SeqCheck::Replay;
        }
        let bit = 1u128 << back;
        if self.seen & bit != 0 {
            return SeqCheck::Replay;
        }
        self.seen |= bit;
        SeqCheck::Fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn replays_and_stale_numbers_are_refused() {
        let mut w = SeqWindow::default();
        assert_eq!(w.check(10), SeqCheck::Fresh);
        assert_eq!(w.check(10), SeqCheck::Replay);
        assert_eq!(w.check(12), SeqCheck::Fresh);
        assert_eq!(w.check(11), SeqCheck::Fresh, "late but inside the window");
        assert_eq!(w.check(11), SeqCheck::Replay);
        assert_eq!(w.check(12 + SEQ_WINDOW), SeqCheck::Fresh);
        assert_eq!(w.check(12), SeqCheck::Replay, "now below the window");
        assert_eq!(w.check(13), SeqCheck::Fresh, "the window's lowest slot");
        assert_eq!(w.check(13 + 10 * SEQ_WINDOW), SeqCheck::Fresh);
        assert_eq!(w.check(14), SeqCheck::Replay);
    }

    proptest! {
        /// Against a model that remembers every number: a number is taken exactly when it
        /// was not seen and is within the window of the highest seen before it.
        #[test]
        fn matches_a_model(seqs in proptest::collection::vec(0u32..600, 1..400)) {
            let mut w = SeqWindow::default();
            let mut seen = std::collections::HashSet::new();
            let mut top: Option<u32> = None;
            for s in seqs {
                let want = match top {
                    None => true,
                    Some(t) => !seen.contains(&s) && (s > t || t - s < SEQ_WINDOW),
                };
                let peeked = w.peek(s);
                let got = w.check(s) == SeqCheck::Fresh;
                prop_assert_eq!(peeked == SeqCheck::Fresh, got, "peek agrees with check");
                prop_assert_eq!(got, want, "seq {}", s);
                if got {
                    seen.insert(s);
                    top = Some(top.map_or(s, |t| t.max(s)));
                }
            }
        }
    }
}
