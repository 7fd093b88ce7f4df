//! The bare path of an untimed access, found the same way in SASS (what ptxas made) and in PTX (what
//! the emulator runs): which loads are a window's bare copy, and whether the path through one
//! stays clear of the probes' work.
//!
//! The layout it recognises (see "TIMED AND UNTIMED WARPS" in `warpscope.cuh`): ONE conditional
//! branch before a window chooses the path. One side reaches the window's opening clock read (the
//! timed path: the probe's preparation, then the window); the other reaches a copy of the window's
//! load with nothing before it (the bare path). ptxas may also if-convert the bare path: the copy
//! then sits just before the branch under the branch's own guard, and the taken branch goes on
//! past the window. Both streams are abstracted to [`Step`]s so that the rule is written once.

/// What the bare-path analysis needs to know of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A clock read.
    Clock,
    /// A load a probe may time.
    Load,
    /// A memory fence (a fenced probe's close, a record's drain).
    Fence,
    /// A branch; `target` is the instruction it lands on, where known.
    Branch {
        conditional: bool,
        target: Option<usize>,
    },
    /// An exit or return.
    Exit,
    /// Anything else.
    Other,
}

/// A window's bare copy: the load an untimed warp runs instead of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BareCopy {
    /// The conditional branch that chooses between the two paths.
    pub branch: usize,
    /// The bare path's copy of the load.
    pub load: usize,
    /// The timed path's window: its opening clock read.
    pub open: usize,
    /// Where the bare path goes on after the copy.
    pub resume: usize,
}

/// Unconditional branches followed in a row before a path is given up (a chain of jumps between
/// the choosing branch and either path's first instruction is short).
const MAX_HOPS: usize = 8;

/// The first instruction from `k` on that is not `Other`, following unconditional branches.
fn next_event(steps: &[Step], mut k: usize) -> Option<usize> {
    let mut hops = 0;
    while let Some(s) = steps.get(k) {
        match *s {
            Step::Other => k += 1,
            Step::Branch {
                conditional: false,
                target: Some(t),
            } if hops < MAX_HOPS => {
                hops += 1;
                k = t;
            }
            _ => return Some(k),
        }
    }
    None
}

/// The timed path's opening clock read from `k` on: the probe's preparation may branch forward
/// within itself (a traced warp's extra load), never past the clock read.
fn opening_clock(steps: &[Step], k: usize) -> Option<usize> {
    let start = next_event(steps, k)?;
    let end = (start..steps.len()).find(|&i| match steps[i] {
        Step::Other => false,
        Step::Branch {
            conditional: true,
            target: Some(t),
        } => t <= i,
        _ => true,
    })?;
    let forward_within = (start..end).all(|i| match steps[i] {
        Step::Branch {
            target: Some(t), ..
        } => t <= end,
        _ => true,
    });
    (steps[end] == Step::Clock && forward_within).then_some(end)
}

/// Every window's bare copy. `same(a, b)`: whether loads `a` and `b` are the same kind of load
/// (a copy, not another access); `guarded_like(a, b)`: whether instruction `a` runs under the same
/// guard as branch `b`.
pub fn bare_copies(
    steps: &[Step],
    same: impl Fn(usize, usize) -> bool,
    guarded_like: impl Fn(usize, usize) -> bool,
) -> Vec<BareCopy> {
    let clocks: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i] == Step::Clock)
        .collect();
    // The window opened at `open`, if it holds one load of `load`'s kind (the kernel-begin read
    // opens no window).
    let copies = |open: usize, load: usize| {
        if clocks.first() == Some(&open) {
            return None;
        }
        let close = clocks.iter().copied().find(|&c| c > open)?;
        let timed: Vec<usize> = (open + 1..close)
            .filter(|&k| steps[k] == Step::Load)
            .collect();
        matches!(timed.as_slice(), [t] if same(*t, load)).then_some(())
    };
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let Step::Branch {
            conditional: true,
            target: Some(t),
        } = *s
        else {
            continue;
        };
        // If-converted: the copy right before the branch, under its guard; the timed path falls
        // through.
        let before = (0..i).rev().find(|&k| steps[k] != Step::Other);
        if let Some(load) = before.filter(|&k| steps[k] == Step::Load && guarded_like(k, i))
            && let Some(open) = opening_clock(steps, i + 1)
            && copies(open, load).is_some()
        {
            out.push(BareCopy {
                branch: i,
                load,
                open,
                resume: t,
            });
            continue;
        }
        for (bare_side, timed_side) in [(t, i + 1), (i + 1, t)] {
            let Some(load) = next_event(steps, bare_side).filter(|&l| steps[l] == Step::Load)
            else {
                continue;
            };
            let Some(open) = opening_clock(steps, timed_side) else {
                continue;
            };
            if copies(open, load).is_some() {
                out.push(BareCopy {
                    branch: i,
                    load,
                    open,
                    resume: load + 1,
                });
                break;
            }
        }
    }
    out
}

/// Where the bare path after `copy`'s load first runs probe work, if it does: a clock read of a
/// window (`windows`' opening and closing reads) or a fence, before the path leaves the straight
/// line (a conditional branch, an exit, or another clock read: the kernel-end one).
pub fn probe_work_after(steps: &[Step], copy: &BareCopy, windows: &[usize]) -> Option<usize> {
    let mut k = copy.resume;
    let mut hops = 0;
    while let Some(s) = steps.get(k) {
        match *s {
            Step::Fence => return Some(k),
            Step::Clock => return windows.contains(&k).then_some(k),
            Step::Branch {
                conditional: false,
                target: Some(t),
            } if hops < MAX_HOPS => {
                hops += 1;
                k = t;
            }
            Step::Branch { .. } | Step::Exit => return None,
            Step::Load | Step::Other => k += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Step::*;

    fn br(conditional: bool, target: usize) -> Step {
        Branch {
            conditional,
            target: Some(target),
        }
    }

    /// begin clock; choosing branch to the timed path; bare load; jump past the window; timed
    /// path: prepare, open, load, close; the join; the kernel-end clock.
    fn layout() -> Vec<Step> {
        vec![
            Clock,        // 0 begin
            br(true, 4),  // 1 choose
            Load,         // 2 bare copy
            br(false, 8), // 3 past the window
            Other,        // 4 prepare
            Clock,        // 5 open
            Load,         // 6 timed
            Clock,        // 7 close
            Other,        // 8 join
            Clock,        // 9 end
            Exit,         // 10
        ]
    }

    #[test]
    fn the_bare_copy_is_found_and_its_path_is_clear() {
        let s = layout();
        let copies = bare_copies(&s, |_, _| true, |_, _| false);
        assert_eq!(
            copies,
            vec![BareCopy {
                branch: 1,
                load: 2,
                open: 5,
                resume: 3
            }]
        );
        assert_eq!(probe_work_after(&s, &copies[0], &[5, 7]), None);
    }

    #[test]
    fn a_bare_path_that_falls_into_the_window_is_caught() {
        let mut s = layout();
        s[3] = Other;
        let copies = bare_copies(&s, |_, _| true, |_, _| false);
        assert_eq!(copies.len(), 1);
        assert_eq!(probe_work_after(&s, &copies[0], &[5, 7]), Some(5));
    }

    #[test]
    fn another_kind_of_load_or_no_choosing_branch_is_no_bare_copy() {
        assert!(bare_copies(&layout(), |_, _| false, |_, _| false).is_empty());
        let mut s = layout();
        s[1] = Other;
        assert!(bare_copies(&s, |_, _| true, |_, _| false).is_empty());
    }

    #[test]
    fn an_if_converted_bare_copy_is_found_only_under_the_branch_guard() {
        // The copy under the branch's guard, the taken branch past the window.
        let s = vec![
            Clock,
            Load,
            br(true, 6),
            Clock,
            Load,
            Clock,
            Other,
            Clock,
            Exit,
        ];
        let copies = bare_copies(&s, |_, _| true, |_, _| true);
        assert_eq!(
            copies,
            vec![BareCopy {
                branch: 2,
                load: 1,
                open: 3,
                resume: 6
            }]
        );
        assert_eq!(probe_work_after(&s, &copies[0], &[3, 5]), None);
        assert!(bare_copies(&s, |_, _| true, |_, _| false).is_empty());
    }
}
