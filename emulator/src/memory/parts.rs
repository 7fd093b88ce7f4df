//! Answering the L2 requests of a round partition by partition, on every thread free for it.
//!
//! The memory partitions (`dram.partitions`, [`Below`]) share nothing, so each can answer its
//! share of the requests in global order on its own, and the answers are those of one thread
//! answering every request in global order. One thing ties them: a miss that waited for one
//! of its SM's MSHRs is sent when an earlier request of that SM is answered, possibly in
//! another partition, and its send cycle is an expression in that SM's pending cycles. So the
//! coordinating thread walks the requests in global order: it publishes each send cycle that
//! waits on answers once every earlier answer is given, gives each answer to its SM's token as
//! it comes, and hands an SM over once its last request is answered. Meanwhile every thread
//! answers what it can: a partition no other thread holds, as far as its requests' send cycles
//! are published. The coordinator drives the partition it waits for itself when no thread
//! holds it, so one thread alone answers everything. Nothing waits in a cycle: the earliest
//! unpublished send depends only on earlier requests, whose own sends are published.
//!
//! Taking the requests apart costs more than it gains on few threads, where the engine answers
//! in global order instead (`PARTS_FROM_THREADS` in engine/mod.rs).

use super::below::Part;
use super::{Below, Key, L2Req, SmMem, in_global_order};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

/// Not known yet (an answer or a send cycle); real cycles stay far below it.
const NONE: u64 = u64::MAX;

/// No request left (in [`Hint::next`]).
const DONE: u32 = u32::MAX;

/// One partition taken out of [`Below`] for a round, with its requests (their global index and
/// the request) and how many it has answered.
#[derive(Debug)]
struct Work {
    part: Option<Part>,
    items: Vec<(u32, L2Req)>,
    next: usize,
}

/// What a thread reads to decide whether to take a partition, without its lock.
#[derive(Debug)]
struct Hint {
    /// Whether a thread holds it.
    busy: AtomicBool,
    /// The global index of its next request to answer; `DONE` when all are answered.
    next: AtomicU32,
}

/// One partition's share of the answering. Its parts sit on cache lines apart because the
/// threads use them differently: every idle thread polls the hint, the holder writes the
/// lock's line and the partition's state at every answer, and the coordinator reads the
/// answers. A thread that tried the lock of a partition held elsewhere would take the line
/// from its holder at each try, whether or not it got the lock; reading the hint first
/// leaves the holder's lines alone.
#[derive(Debug)]
struct Share {
    hint: CachePadded<Hint>,
    /// The answers, by the request's place among the partition's (written by its holder in
    /// order, one line after another; read by the coordinator's walk).
    answers: CachePadded<Vec<AtomicU64>>,
    work: CachePadded<Mutex<Work>>,
}

/// A partition's `busy` hint while a thread holds it. Cleared when dropped, also by a panic
/// in the answering, so that the walk still takes the partition over (see [`try_take`]).
struct Held<'a>(&'a AtomicBool);

impl<'a> Held<'a> {
    fn new(busy: &'a AtomicBool) -> Held<'a> {
        busy.store(true, Ordering::Relaxed);
        Held(busy)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// A round's requests being answered partition by partition; shared by the threads.
#[derive(Debug)]
pub(crate) struct Answering {
    shares: Vec<Share>,
    /// By global index, the send cycle (published when it waits on answers).
    sends: Vec<AtomicU64>,
}

/// The coordinator's record of one request, in global order.
#[derive(Debug)]
pub(crate) struct Ask {
    sm: u32,
    part: u32,
    /// Its place among the partition's requests.
    pos: u32,
    token: u64,
    /// The send cycle as queued: a cycle, or a token of the SM's to evaluate.
    sent: u64,
    now: u64,
    /// The SM's last request before the bound: the SM can be handed over once it is answered.
    last: bool,
}

impl Ask {
    /// The SM that sent it.
    pub(crate) fn sm(&self) -> usize {
        self.sm as usize
    }
}

/// `m`'s lock, also when a panicking thread poisoned it: the panic ends the launch, and what
/// the lock holds is only read to put partitions and SMs back.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The partition if no other thread holds it. One that a panicking thread left is taken over,
/// so that the walk does not wait for it forever; the panic ends the launch when its scope
/// closes.
fn try_take(m: &Mutex<Work>) -> Option<MutexGuard<'_, Work>> {
    match m.try_lock() {
        Ok(w) => Some(w),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl Answering {
    /// Whether every request is answered.
    #[cfg(test)]
    pub(crate) fn done(&self) -> bool {
        (self.shares.iter()).all(|s| s.hint.next.load(Ordering::Acquire) == DONE)
    }

    /// Answers what this thread can now: every partition no other thread holds, as far as
    /// its send cycles are known. Whether it answered any.
    pub(crate) fn help(&self) -> bool {
        let mut any = false;
        for s in &self.shares {
            let next = s.hint.next.load(Ordering::Acquire);
            let can = next != DONE
                && !s.hint.busy.load(Ordering::Relaxed)
                && self.sends[next as usize].load(Ordering::Acquire) != NONE;
            if can {
                any |= self.drive(s);
            }
        }
        any
    }

    /// Answers partition `s`'s requests in order while their send cycles are known, unless
    /// another thread holds it. Whether it answered any.
    fn drive(&self, s: &Share) -> bool {
        let Some(mut w) = try_take(&s.work) else {
            return false;
        };
        let _held = Held::new(&s.hint.busy);
        let Work { part, items, next } = &mut *w;
        let start = *next;
        if let Some(part) = part.as_mut() {
            while let Some(&(g, r)) = items.get(*next) {
                let sent = self.sends[g as usize].load(Ordering::Acquire);
                if sent == NONE {
                    break;
                }
                let v = part.answer(&L2Req { sent, ..r });
                debug_assert!(v >= sent + r.hit, "an answer comes after its request");
                s.answers[*next].store(v, Ordering::Release);
                *next += 1;
            }
        }
        let waiting = items.get(*next).map_or(DONE, |&(g, _)| g);
        s.hint.next.store(waiting, Ordering::Release);
        *next > start
    }
}

/// Takes the SMs' requests before `bound` off their queues in global order and moves `below`'s
/// partitions out to answer them; `None`, with nothing taken, when `below` has one partition.
/// The send cycles already known are published; the rest wait for [`finish_in_parts`].
pub(crate) fn begin_in_parts(
    below: &mut Below,
    sms: &mut [Option<&mut SmMem>],
    bound: Key,
) -> Option<(Answering, Vec<Ask>)> {
    if below.partitions() < 2 {
        return None;
    }
    let heads = (sms.iter().enumerate())
        .filter_map(|(i, s)| {
            let r = s.as_deref()?.queue.front()?;
            Some((r.now, i as u32, r.seq)).filter(|&k| k < bound)
        })
        .collect();
    let mut items = std::mem::take(&mut below.asked);
    items.resize_with(below.partitions(), Vec::new);
    let most: usize = sms.iter().flatten().map(|s| s.queue.len()).sum();
    let (mut asks, mut sends) = (Vec::with_capacity(most), Vec::with_capacity(most));
    in_global_order(heads, bound, |i| {
        let sm = sms[i].as_deref_mut()?;
        let r = sm.queue.pop_front()?;
        let g = asks.len() as u32;
        let part = below.route(&r);
        let pos = items[part].len() as u32;
        items[part].push((g, r));
        sends.push(AtomicU64::new(sm.pend.value(r.sent).unwrap_or(NONE)));
        let next = sm.queue.front().map(|n| (n.now, n.seq));
        asks.push(Ask {
            sm: i as u32,
            part: part as u32,
            pos,
            token: r.token,
            sent: r.sent,
            now: r.now,
            last: next.is_none_or(|(now, seq)| (now, i as u32, seq) >= bound),
        });
        next
    });
    let shares = (below.take_parts().into_iter().zip(items))
        .map(|(part, items)| Share {
            hint: CachePadded::new(Hint {
                busy: AtomicBool::new(false),
                next: AtomicU32::new(items.first().map_or(DONE, |&(g, _)| g)),
            }),
            answers: CachePadded::new(items.iter().map(|_| AtomicU64::new(NONE)).collect()),
            work: CachePadded::new(Mutex::new(Work {
                part: Some(part),
                items,
                next: 0,
            })),
        })
        .collect();
    Some((Answering { shares, sends }, asks))
}

/// The coordinator's walk (see the module doc): publishes the send cycles that wait on
/// answers, gives every answer to its SM and calls `release(sm, side)` once an SM's last
/// request is answered; then puts the partitions back into `below`.
pub(crate) fn finish_in_parts<'a>(
    below: &mut Below,
    sms: &mut [Option<&'a mut SmMem>],
    answering: &Answering,
    asks: Vec<Ask>,
    mut release: impl FnMut(usize, &mut Option<&'a mut SmMem>),
) {
    for (g, ask) in asks.iter().enumerate() {
        let i = ask.sm as usize;
        if answering.sends[g].load(Ordering::Acquire) == NONE {
            // Every earlier answer is given: the send cycle is known, as when one thread
            // answers everything in global order.
            let sent = sms[i].as_deref_mut().and_then(|s| s.pend.value(ask.sent));
            debug_assert!(
                sent.is_some(),
                "a waiting miss is sent after answers that came first"
            );
            let sent = sent.unwrap_or(ask.now);
            answering.sends[g].store(sent, Ordering::Release);
        }
        let share = &answering.shares[ask.part as usize];
        let v = loop {
            let v = share.answers[ask.pos as usize].load(Ordering::Acquire);
            if v != NONE {
                break v;
            }
            // As far as it goes, not only to this request: the walk then finds the next ones
            // answered instead of driving each.
            if share.hint.busy.load(Ordering::Relaxed) || !answering.drive(share) {
                std::hint::spin_loop();
            }
        };
        if let Some(sm) = sms[i].as_deref_mut() {
            if ask.token != 0 {
                sm.pend.give(ask.token, v);
            }
            if ask.last {
                release(i, &mut sms[i]);
            }
        }
    }
    let (mut parts, mut asked) = (Vec::new(), Vec::new());
    for s in &answering.shares {
        let mut w = lock(&s.work);
        parts.extend(w.part.take());
        let mut room = std::mem::take(&mut w.items);
        room.clear();
        asked.push(room);
    }
    below.put_parts(parts);
    below.asked = asked;
}
