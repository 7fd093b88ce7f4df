//! Reconvergence points of conditional branches (see `decode`'s module docs): immediate
//! post-dominators on the basic-block graph with a virtual exit node.

use crate::ir::*;

/// Fills `Inst::reconv` of every conditional branch (see the module docs).
#[allow(clippy::needless_range_loop)] // block ids index several parallel tables
pub(crate) fn compute_reconvergence(insts: &mut [Inst]) {
    let n = insts.len();
    if n == 0 {
        return;
    }
    // Basic-block leaders.
    let mut leader = vec![false; n + 1];
    leader[0] = true;
    for (k, x) in insts.iter().enumerate() {
        if matches!(x.op, Op::Bra | Op::Exit | Op::Trap) {
            leader[k + 1] = true;
            if x.op == Op::Bra {
                leader[(x.target as usize).min(n)] = true;
            }
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&k| leader[k]).collect();
    let mut block_of = vec![0usize; n + 1];
    for (b, &s) in starts.iter().enumerate() {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        for slot in &mut block_of[s..e] {
            *slot = b;
        }
    }
    let nb = starts.len();
    let exit = nb; // virtual exit node
    block_of[n] = exit;
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); nb + 1];
    for b in 0..nb {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        let last = &insts[e - 1];
        if matches!(last.op, Op::Exit | Op::Trap) {
            succ[b].push(exit);
        }
        // A pc at or past the end is the exit node.
        succ[b].extend(last.successors(e - 1).map(|p| block_of[p.min(n)]));
    }
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); nb + 1];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            pred[s].push(b);
        }
    }
    // Post-order of the reversed graph from exit.
    let mut order = Vec::with_capacity(nb + 1);
    let mut seen = vec![false; nb + 1];
    let mut stack = vec![(exit, 0usize)];
    seen[exit] = true;
    while let Some(&mut (v, ref mut i)) = stack.last_mut() {
        if *i < pred[v].len() {
            let w = pred[v][*i];
            *i += 1;
            if !seen[w] {
                seen[w] = true;
                stack.push((w, 0));
            }
        } else {
            order.push(v);
            stack.pop();
        }
    }
    let mut po = vec![usize::MAX; nb + 1];
    for (k, &v) in order.iter().enumerate() {
        po[v] = k;
    }
    let mut ipdom = vec![usize::MAX; nb + 1];
    ipdom[exit] = exit;
    let mut changed = true;
    while changed {
        changed = false;
        for &v in order.iter().rev() {
            if v == exit {
                continue;
            }
            let mut new = usize::MAX;
            for &s in &succ[v] {
                if ipdom[s] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    s
                } else {
                    let (mut a, mut b) = (new, s);
                    while a != b {
                        while po[a] < po[b] {
                            a = ipdom[a];
                        }
                        while po[b] < po[a] {
                            b = ipdom[b];
                        }
                    }
                    a
                };
            }
            if new != usize::MAX && ipdom[v] != new {
                ipdom[v] = new;
                changed = true;
            }
        }
    }
    for b in 0..nb {
        let e = starts.get(b + 1).copied().unwrap_or(n);
        let last = &mut insts[e - 1];
        if last.guard != Opnd::None && matches!(last.op, Op::Bra | Op::Exit | Op::Trap) {
            let p = ipdom[b];
            last.reconv = if p == usize::MAX || p >= nb {
                u32::MAX
            } else {
                starts[p] as u32
            };
        }
    }
}
