//! How each host thread spends a launch (`trace::ThreadSeconds`): what tells a launch held by
//! the coordinating thread's serial part from one held by its heaviest SM, or from SM rounds
//! that take longer in sum on many threads than on one (threads that share the host's caches,
//! or cores that are hyperthreads of each other).
//!
//! Each thread keeps its own account, never shared while the launch runs. It reads the host's
//! clock once at the end of each piece of work (pieces back to back share the reading), and once
//! per turn of a waiting thread's loop: about 60 ns a read on the VM, against the 30–40 µs an
//! SM's round takes on average.

use std::time::{Duration, Instant};

use trace::ThreadSeconds;

/// What a stretch of a thread's time went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    SmRounds,
    Answering,
    Coordinating,
    Waiting,
}

/// One thread's time so far, by [`Part`], up to `last`.
pub(super) struct Account {
    last: Instant,
    parts: [Duration; 4],
}

impl Account {
    pub(super) fn start() -> Account {
        Account {
            last: Instant::now(),
            parts: [Duration::ZERO; 4],
        }
    }

    /// Where the time accounted for so far ends.
    pub(super) fn last(&self) -> Instant {
        self.last
    }

    /// The time since the last stretch went to `part`.
    pub(super) fn stretch(&mut self, part: Part) {
        let now = Instant::now();
        self.parts[part as usize] += now.saturating_duration_since(self.last);
        self.last = now;
    }

    /// Work of `part` ran from `since` until now, and the thread waited before it; returns now.
    pub(super) fn worked(&mut self, since: Instant, part: Part) -> Instant {
        let now = Instant::now();
        self.parts[Part::Waiting as usize] += since.saturating_duration_since(self.last);
        self.parts[part as usize] += now.saturating_duration_since(since);
        self.last = now;
        now
    }

    pub(super) fn seconds(&self) -> ThreadSeconds {
        let s = |p: Part| self.parts[p as usize].as_secs_f64();
        ThreadSeconds {
            sm_rounds: s(Part::SmRounds),
            answering: s(Part::Answering),
            coordinating: s(Part::Coordinating),
            waiting: s(Part::Waiting),
        }
    }
}

/// The coordinating thread's seconds first, then the helpers' from the busiest down (helpers
/// finish in no fixed order; this one lets a run's launches be summed thread by thread).
pub(super) fn in_order(
    coordinator: ThreadSeconds,
    mut helpers: Vec<ThreadSeconds>,
) -> Vec<ThreadSeconds> {
    helpers.sort_by(|a, b| b.shared_work().total_cmp(&a.shared_work()));
    let mut all = Vec::with_capacity(helpers.len() + 1);
    all.push(coordinator);
    all.extend(helpers);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stretch_goes_to_one_part_and_the_parts_add_up_to_the_span() {
        let begun = Instant::now();
        let mut a = Account::start();
        std::thread::sleep(Duration::from_millis(2));
        let since = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let ended = a.worked(since, Part::SmRounds);
        assert!(ended >= since);
        std::thread::sleep(Duration::from_millis(1));
        a.stretch(Part::Coordinating);
        let span = begun.elapsed().as_secs_f64();
        let s = a.seconds();
        assert!(
            s.waiting >= 0.002 && s.sm_rounds >= 0.002 && s.coordinating >= 0.001,
            "{s:?}"
        );
        assert_eq!(s.answering, 0.0);
        let sum = s.sm_rounds + s.answering + s.coordinating + s.waiting;
        assert!(sum <= span, "{sum} > {span}");
    }

    #[test]
    fn the_coordinator_comes_first_then_the_busiest_helper() {
        let t = |sm_rounds: f64, answering: f64| ThreadSeconds {
            sm_rounds,
            answering,
            ..ThreadSeconds::default()
        };
        let order = in_order(t(0.5, 0.0), vec![t(1.0, 0.0), t(1.0, 2.0), t(0.1, 0.0)]);
        assert_eq!(
            order,
            vec![t(0.5, 0.0), t(1.0, 2.0), t(1.0, 0.0), t(0.1, 0.0)]
        );
    }
}
