//! Where a launch's first blocks go: the SM of each block of the first wave, in block order,
//! before any runs. Round-robin over the SMs, the visits `sm.dispatch_order` lists, or the
//! visits by units of `sm.dispatch` (the config explains the rule). Later blocks go to
//! whichever SM frees room first (`engine/mod.rs`).

use crate::config::{Dispatch, SmConfig};

/// The SM of each of the first wave's blocks, in block order: at most `total` of them, and
/// none on an SM past `room` blocks.
pub(super) fn first_wave(sm: &SmConfig, room: u32, total: u64) -> Vec<u32> {
    let nsm = sm.count.max(1);
    let room = room.max(1);
    match (&sm.dispatch, sm.dispatch_order.as_deref()) {
        (Some(d), _) => by_units(d, nsm, room, total),
        (None, Some(order)) => by_visits(order, nsm, room, total),
        (None, None) => by_visits(&(0..nsm).collect::<Vec<_>>(), nsm, room, total),
    }
}

/// Each visit one block to the next SM of `order` (cycled) that has room, until the blocks run
/// out or no SM has room.
fn by_visits(order: &[u32], nsm: u32, room: u32, total: u64) -> Vec<u32> {
    let mut held = vec![0u32; nsm as usize];
    let mut placed = Vec::new();
    let mut visits_without_room = 0;
    for &id in order.iter().cycle() {
        if placed.len() as u64 >= total || visits_without_room >= order.len() {
            break;
        }
        match held.get_mut(id as usize) {
            Some(h) if *h < room => {
                *h += 1;
                placed.push(id);
                visits_without_room = 0;
            }
            _ => visits_without_room += 1,
        }
    }
    placed
}

/// The first wave by `d`'s units (the config's [`Dispatch`] explains the rule).
fn by_units(d: &Dispatch, nsm: u32, room: u32, total: u64) -> Vec<u32> {
    let per_tpc = d.sms_per_tpc.max(1);
    let mut w = Wave {
        held: vec![0; nsm as usize],
        tpc_above: vec![0; nsm.div_ceil(per_tpc) as usize],
        per_tpc,
        room,
        level: 0,
        partial: false,
        placed: Vec::new(),
        total,
    };
    // A launch that fills every SM goes out in one level; a smaller one in levels of
    // `total ÷ nsm` blocks a SM, then one more at a time.
    let slots = u64::from(nsm) * u64::from(room);
    w.set_level(if total >= slots {
        room
    } else {
        (total / u64::from(nsm)).clamp(1, u64::from(room)) as u32
    });
    let mut extra_due = !d.extra.is_empty();
    let mut since_extra = 0;
    let mut extra_after = d.extra_first;
    let mut idle_visits = 0;
    for unit in d.units.iter().cycle() {
        if w.done() || idle_visits > d.units.len() {
            break;
        }
        let before = w.placed.len();
        if extra_due && w.visit(&d.extra) > 0 {
            extra_due = false;
        }
        w.rise();
        w.visit(unit);
        w.rise();
        since_extra += 1;
        if since_extra == extra_after {
            extra_due = !d.extra.is_empty();
            since_extra = 0;
            extra_after = d.extra_every;
        }
        idle_visits = if w.placed.len() > before {
            0
        } else {
            idle_visits + 1
        };
    }
    w.placed
}

/// The placement so far of [`by_units`].
struct Wave {
    held: Vec<u32>,
    /// Per TPC, its SMs that took a block in this level (counted in a partial level only).
    tpc_above: Vec<u32>,
    per_tpc: u32,
    room: u32,
    /// No SM takes more blocks than this.
    level: u32,
    /// Whether the launch's blocks cannot fill every SM to this level, so that TPCs take one
    /// block each first.
    partial: bool,
    placed: Vec<u32>,
    total: u64,
}

impl Wave {
    fn set_level(&mut self, level: u32) {
        self.level = level;
        self.partial = self.total < self.held.len() as u64 * u64::from(level);
        self.tpc_above.fill(0);
    }

    /// A level every SM has reached gives way to the next, up to the SMs' room.
    fn rise(&mut self) {
        if self.level < self.room && self.held.iter().all(|&h| h >= self.level) {
            self.set_level(self.level + 1);
        }
    }

    fn done(&self) -> bool {
        self.placed.len() as u64 >= self.total
    }

    /// Gives a block to each SM of `unit` that may take one; how many it gave.
    fn visit(&mut self, unit: &[u32]) -> usize {
        let before = self.placed.len();
        for &id in unit {
            if self.done() {
                break;
            }
            if self.may_take(id) {
                self.held[id as usize] += 1;
                if self.partial {
                    self.tpc_above[(id / self.per_tpc) as usize] += 1;
                }
                self.placed.push(id);
            }
        }
        self.placed.len() - before
    }

    fn may_take(&self, id: u32) -> bool {
        // An id past the SMs (a configuration built in code, unchecked) takes nothing.
        if self.held.get(id as usize).is_none_or(|&h| h >= self.level) {
            return false;
        }
        // In a partial level a TPC takes a second block only once every TPC has one.
        !self.partial
            || self.tpc_above[(id / self.per_tpc) as usize] == 0
            || self.tpc_above.iter().all(|&a| a > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GpuConfig;

    /// The H100's and H200's units (`docs/gpu/2026-12-06-gpc-dispatch.md`), from the
    /// what-if configuration that gives them.
    fn hopper() -> SmConfig {
        let text = include_str!("../../../docs/gpu/hopper-dispatch.toml");
        GpuConfig::from_toml_str(text, "hopper-dispatch.toml")
            .unwrap()
            .sm
    }

    /// A record's SM per block, in block order (`by * grid_x + bx`), for one shape.
    fn recorded(csv: &str, shape: &str) -> Vec<u32> {
        let mut rows: Vec<(u32, u32, u32)> = csv
            .lines()
            .skip(1)
            .filter_map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[0] == shape).then(|| {
                    (
                        f[2].parse().unwrap(),
                        f[1].parse().unwrap(),
                        f[3].parse().unwrap(),
                    )
                })
            })
            .collect();
        rows.sort();
        rows.into_iter().map(|(_, _, sm)| sm).collect()
    }

    #[test]
    fn the_units_place_the_warm_launches_blocks_as_an_h100_and_an_h200_did() {
        let placed = first_wave(&hopper(), 16, 2048);
        for csv in [
            include_str!("../../../docs/gpu/block-placement-h100-2026-11-27.csv"),
            include_str!("../../../docs/gpu/block-placement-h200-2026-11-29.csv"),
        ] {
            // The three launches after the process's first; 128x1's SMs 124-131 took their
            // blocks in another order inside each visit.
            for (shape, least) in [("16x8", 1981), ("8x16", 1981), ("128x1", 1860)] {
                let silicon = recorded(csv, shape);
                assert_eq!(silicon.len(), 2048);
                let same = placed.iter().zip(&silicon).filter(|(a, b)| a == b).count();
                assert!(same >= least, "{shape}: {same} blocks on silicon's SM");
                // Which SMs hold a 16th block sets a frame's slowest SM.
                let sixteen = |p: &[u32]| {
                    let mut n = [0u32; 132];
                    p.iter().for_each(|&s| n[s as usize] += 1);
                    (0..132).filter(|&s| n[s] == 16).collect::<Vec<_>>()
                };
                let (ours, theirs) = (sixteen(&placed), sixteen(&silicon));
                let differ = ours.iter().filter(|s| !theirs.contains(s)).count();
                assert_eq!(theirs.len(), 68);
                assert!(
                    differ <= 3,
                    "{shape}: {differ} SMs hold a 16th block silicon's do not"
                );
            }
        }
    }

    #[test]
    fn round_robin_and_listed_visits_are_unchanged() {
        let mut sm = GpuConfig::preset("gtx480").unwrap().sm;
        assert_eq!(
            first_wave(&sm, 2, 20),
            [
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 1, 2, 3, 4
            ]
        );
        assert_eq!(first_wave(&sm, 1, 100).len(), 15);
        sm.dispatch_order = Some((0..15).rev().chain([0]).collect());
        assert_eq!(
            &first_wave(&sm, 2, 17)[..],
            [14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 14]
        );
    }

    #[test]
    fn units_fill_levels_in_turn_and_spread_the_last_over_tpcs() {
        let mut sm = GpuConfig::preset("gtx480").unwrap().sm;
        sm.count = 8;
        sm.dispatch = Some(Dispatch {
            units: vec![vec![0, 1, 2, 3], vec![4, 5]],
            extra: vec![6, 7],
            extra_first: 1,
            extra_every: 2,
            sms_per_tpc: 2,
        });
        // 8 SMs, room for 4 each, 19 blocks: levels of 2, then a partial third level of 3
        // blocks that goes to three TPCs' first SMs.
        let placed = first_wave(&sm, 4, 19);
        let mut held = [0u32; 8];
        placed.iter().for_each(|&s| held[s as usize] += 1);
        assert_eq!(held.iter().sum::<u32>(), 19);
        assert!(held.iter().all(|&h| (2..=3).contains(&h)), "{held:?}");
        let thirds: Vec<usize> = (0..8).filter(|&s| held[s] == 3).collect();
        let tpcs: Vec<usize> = thirds.iter().map(|s| s / 2).collect();
        assert_eq!(tpcs.len(), 3);
        assert!(
            tpcs.windows(2).all(|w| w[0] != w[1]),
            "one per TPC: {thirds:?}"
        );
        // The extra unit first, then after one visit of the others, then after every two.
        assert_eq!(&placed[..8], [6, 7, 0, 1, 2, 3, 6, 7]);
        // A grid that fills every SM places room blocks on each and no more.
        let full = first_wave(&sm, 4, 1000);
        assert_eq!(full.len(), 32);
    }
}
