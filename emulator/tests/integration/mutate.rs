//! Property test: mutated real PTX (nvcc output of the corpus) never makes the parser — or a
//! launch of whatever still parses — panic. The cargo-fuzz targets in `emulator/fuzz` do the
//! same with coverage guidance.

use emulator::{Emulator, GpuConfig, LaunchParams, Module};
use proptest::prelude::*;

const SNIPPETS: &[&str] = &[
    "}",
    "{",
    ";",
    ",",
    "[",
    "]",
    "%r1",
    "%rd1",
    "%p1",
    "@%p1",
    "bra $L__BB0_1;",
    "bar.sync 0;",
    "0f3F800000",
    "-1",
    "99999999999999999999",
    ".reg .b32 %q<4>;",
    "ld.global.u32 %r1, [%rd1];",
    "exit;",
    "<",
    ">",
    "|",
    ".shared .align 4 .b8 s[1024];",
    "st.shared.u32 [%r1], %r1;",
    "membar.cta;",
    "\"",
    "/*",
    "//",
];

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, usize),
    Replace(usize, u8),
    Truncate(usize),
    SwapLines(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), 0..SNIPPETS.len()).prop_map(|(a, s)| Edit::Insert(a, s)),
        (any::<usize>(), 32u8..127).prop_map(|(a, c)| Edit::Replace(a, c)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
    ]
}

fn apply(src: &str, edits: &[Edit]) -> String {
    let mut s: Vec<u8> = src.as_bytes().to_vec();
    for e in edits {
        let n = s.len().max(1);
        match *e {
            Edit::Delete(a, k) => {
                let a = a % n;
                let b = (a + k).min(s.len());
                s.drain(a.min(s.len())..b);
            }
            Edit::Insert(a, i) => {
                let a = (a % n).min(s.len());
                s.splice(a..a, SNIPPETS[i].bytes());
            }
            Edit::Replace(a, c) => {
                if !s.is_empty() {
                    s[a % n] = c;
                }
            }
            Edit::Truncate(a) => s.truncate(a % n),
            Edit::SwapLines(a, b) => {
                let text = String::from_utf8_lossy(&s).into_owned();
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let (i, j) = (a % lines.len(), b % lines.len());
                    lines.swap(i, j);
                }
                s = lines.join("\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn mutated_ptx_never_panics(k in 0usize..64, edits in proptest::collection::vec(edit(), 1..6)) {
        let corpus = kernels::corpus();
        let src = corpus[k % corpus.len()].ptx;
        let text = apply(src, &edits);
        if let Ok(m) = Module::parse(&text) {
            let mut emu = Emulator::new(GpuConfig::preset("v100").unwrap());
            if let Ok(id) = emu.load(&m) {
                for e in m.entries() {
                    let args = e.params.iter().map(|p| vec![0u8; p.size_bytes as usize]).collect();
                    let p = LaunchParams { grid: [2, 1, 1], block: [64, 1, 1], dynamic_shared_bytes: 0,
                        regs_per_thread: 32, args, max_warp_instructions: 20_000 };
                    // Any outcome is fine except a panic; results with zero pointers mostly fault.
                    let _ = emu.launch(id, &e.name, &p);
                }
            }
        }
    }
}
