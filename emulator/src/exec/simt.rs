//! The warp's architectural state and its SIMT reconvergence stack: advancing, popping
//! finished entries, and splitting on a divergent branch (see the module doc of `exec`).

use crate::ir::Inst;

/// One SIMT stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub pc: u32,
    pub rpc: u32,
    pub mask: u32,
}

/// Architectural state of one warp.
#[derive(Debug, Default)]
pub(crate) struct Warp {
    /// `regs[reg * 32 + lane]`.
    pub regs: Vec<u64>,
    /// Each predicate's lanes as the bits of one word (`preds[pred] >> lane & 1`).
    pub preds: Vec<u32>,
    pub stack: Vec<Entry>,
    /// Per-lane carry flags of `add.cc`/`addc`.
    pub carry: u32,
    /// Local memory, `local_bytes` per lane, lane-major.
    pub local: Vec<u8>,
    /// Warp index within its block.
    pub wib: u32,
    /// Hardware warp slot on the SM.
    pub slot: u32,
}

impl Warp {
    #[inline]
    pub(super) fn advance(&mut self) {
        if let Some(t) = self.stack.last_mut() {
            t.pc += 1;
        }
        self.normalize();
    }
    #[inline]
    pub(super) fn normalize(&mut self) {
        while let Some(t) = self.stack.last() {
            if t.mask == 0 || t.pc == t.rpc {
                self.stack.pop();
            } else {
                break;
            }
        }
    }
    /// The next pc to run, or `None` when the warp has finished.
    #[inline]
    pub(crate) fn pc(&self) -> Option<u32> {
        self.stack.last().map(|e| e.pc)
    }
    pub(crate) fn active(&self) -> u32 {
        self.stack.last().map_or(0, |e| e.mask)
    }
}

pub(super) fn branch(w: &mut Warp, x: &Inst, taken: u32, active: u32) {
    let nt = active & !taken;
    let Some(top) = w.stack.last_mut() else {
        return;
    };
    if taken == 0 {
        w.advance();
        return;
    }
    if nt == 0 {
        top.pc = x.target;
        w.normalize();
        return;
    }
    let pc = top.pc;
    let rpc = x.reconv;
    if top.rpc == rpc {
        w.stack.pop();
    } else {
        top.pc = rpc;
    }
    if pc + 1 != rpc {
        w.stack.push(Entry {
            pc: pc + 1,
            rpc,
            mask: nt,
        });
    }
    if x.target != rpc {
        w.stack.push(Entry {
            pc: x.target,
            rpc,
            mask: taken,
        });
    }
    w.normalize();
}
