//! Running the lane loops with instructions the baseline x86-64 target lacks, where the host
//! has them.
//!
//! Why: the release build targets baseline x86-64 (SSE2), so that one binary runs on any
//! x86-64 host, the GPU machines included. There `f32::mul_add` is a call to `fmaf` per lane,
//! and `floor` and `trunc` calls to `floorf` and `truncf`: a warp's `fma.rn.f32` made 32 calls,
//! a volume sample six. Compiled with FMA and SSE4.1 they are single instructions, and the FMA
//! loop becomes four lanes per instruction. (`round`, halves away from zero, has no instruction
//! even then, so the texture filter rounds from `trunc`.) Each of these operations has one right
//! answer (an FMA rounds once, floor and trunc are exact) and the compiler contracts no other
//! multiply and add into an FMA, so every number comes out the same on either path. What may
//! differ is which NaN an operation with two NaN operands returns, as it may between any two
//! builds: the texture filter makes its NaNs one quiet NaN for that reason (`texture::quiet`).
//!
//! The second module of the workspace with unsafe code, after the CUDA backend's FFI: calling a
//! function compiled for features the build does not assume is unsafe, and is sound once the
//! host is known to have them, which [`with_host_features`] checks first.
#![allow(unsafe_code)]

/// Work to compile with the host's features: [`HostWork::run`] is inlined into [`featured`]'s
/// body, so everything it inlines gets FMA and SSE4.1. A closure is work too, but a closure
/// cannot be marked `#[inline(always)]` (not on stable Rust) and the compiler leaves a large one
/// out of line, compiled for the baseline: the texture fetch, passed as a closure, kept its calls
/// to `floorf` that way. Large work is a type of its own whose `run` is `#[inline(always)]`.
pub(crate) trait HostWork {
    type Out;
    fn run(self) -> Self::Out;
}

impl<F: FnOnce() -> R, R> HostWork for F {
    type Out = R;
    #[inline(always)]
    fn run(self) -> R {
        self()
    }
}

/// Runs `work`, compiled with FMA and SSE4.1 when the host has both (checked once and cached by
/// the standard library), else as the build targets. What `work` calls should be
/// `#[inline(always)]`: what is not inlined into it keeps the baseline.
#[inline(always)]
pub(crate) fn with_host_features<W: HostWork>(work: W) -> W::Out {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("sse4.1") {
        // SAFETY: `featured`'s only requirement is that the CPU has FMA and SSE4.1, checked
        // just above.
        return unsafe { featured(work) };
    }
    work.run()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,sse4.1")]
fn featured<W: HostWork>(work: W) -> W::Out {
    work.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_paths_give_the_same_bits() {
        // Cases where a multiply then an add rounds twice and differs from one rounding, and
        // floor/round/trunc at halves, negatives and signed zeros.
        let fma_cases = [
            (1.0f32 + f32::EPSILON, 1.0 - f32::EPSILON, -1.0f32),
            (0.1, 10.0, -1.0),
            (3.0e38, 2.0, -3.0e38),
            (-0.0, 0.0, -0.0),
            (f32::NAN, 1.0, 1.0),
            (1.0e-40, 1.0e-3, 0.0),
        ];
        for (a, b, c) in fma_cases {
            let here = with_host_features(|| a.mul_add(b, c)).to_bits();
            assert_eq!(here, a.mul_add(b, c).to_bits(), "{a} {b} {c}");
        }
        for v in [
            -2.5f32, -0.5, -0.0, 0.0, 0.49999997, 0.5, 1.5, 2.5, 8388609.0, -1.0e-40,
        ] {
            let (f, r, t) = with_host_features(|| (v.floor(), v.round(), v.trunc()));
            assert_eq!(f.to_bits(), v.floor().to_bits(), "floor {v}");
            assert_eq!(r.to_bits(), v.round().to_bits(), "round {v}");
            assert_eq!(t.to_bits(), v.trunc().to_bits(), "trunc {v}");
        }
    }
}
