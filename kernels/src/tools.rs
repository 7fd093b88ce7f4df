//! Run-time access to the CUDA binary tools (cuobjdump, nvdisasm), and a SASS listing parser.
//!
//! Why: the SASS placement tests must look at what ptxas really emitted — instruction order *and*
//! the dependency-wait control bits — for each embedded fatbin, and other crates' tests may want
//! the same. The parser reads `cuobjdump -sass` output of Volta-and-later 128-bit encodings.
//! Main items: [`cuobjdump_sass`], [`parse_sass`], [`SassFunction`], [`SassInstr`], [`Control`].
//!
//! ```
//! let text = "\t\tFunction : k\n        /*0010*/                   CS2R R4, SR_CLOCKLO ;   /* 0x0000000000047805 */\n                                    /* 0x000fe20000015000 */\n";
//! let f = kernels::tools::parse_sass(text);
//! assert_eq!(f[0].name, "k");
//! assert_eq!(f[0].instrs[0].opcode, "CS2R");
//! assert_eq!(f[0].instrs[0].ctrl.write_barrier, None);
//! ```

use std::process::Command;

use crate::KernelsError;
use crate::toolchain::{run_tool, temp_input, tool_path};

/// `ptxas -arch=sm_<arch>` of a PTX text: the cubin a GPU would run (e.g. of a kernel the PTX
/// rewriter instrumented, for the SASS placement checks).
pub fn assemble_cubin(ptx: &str, arch: u32) -> Result<Vec<u8>, KernelsError> {
    let tool = tool_path("ptxas").ok_or(KernelsError::ToolNotFound { tool: "ptxas" })?;
    let (dir, input) = temp_input("in.ptx", ptx.as_bytes())?;
    let output = dir.path().join("out.cubin");
    let arch_flag = format!("-arch=sm_{arch}");
    run_tool(
        Command::new(&tool)
            .arg(&arch_flag)
            .arg(&input)
            .arg("-o")
            .arg(&output),
        &tool,
        &format!("ptxas {arch_flag}"),
    )?;
    std::fs::read(&output).map_err(|source| KernelsError::Io {
        path: output,
        source,
    })
}

/// `cuobjdump -sass -arch sm_<arch>` of a fatbin or cubin image (written to a temporary file
/// because cuobjdump reads only files).
pub fn cuobjdump_sass(image: &[u8], arch: u32) -> Result<String, KernelsError> {
    let tool = tool_path("cuobjdump").ok_or(KernelsError::ToolNotFound { tool: "cuobjdump" })?;
    let (_dir, file) = temp_input("image.fatbin", image)?;
    let arch_flag = format!("sm_{arch}");
    let o = run_tool(
        Command::new(&tool)
            .args(["-sass", "-arch", &arch_flag])
            .arg(&file),
        &tool,
        &format!("cuobjdump -sass -arch {arch_flag}"),
    )?;
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The scheduling control bits of one Volta+ instruction (bits 105..125 of the 128-bit word).
///
/// The hardware issues in order; an instruction with `wait_mask` bit `k` set does not issue until
/// every operation that set scoreboard `k` (as write or read barrier) has released it. A variable-
/// latency instruction (load, texture fetch, membar) sets a barrier; its consumers wait on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Control {
    pub stall: u8,
    pub yield_flag: bool,
    /// Scoreboard released when this instruction's results are written.
    pub write_barrier: Option<u8>,
    /// Scoreboard released when this instruction's source operands have been read.
    pub read_barrier: Option<u8>,
    /// Scoreboards this instruction waits for before issuing (bit k = scoreboard k).
    pub wait_mask: u8,
}

impl Control {
    /// Decodes the control field from the high 64-bit word of the encoding.
    pub fn from_high_word(hi: u64) -> Self {
        let c = hi >> 41;
        let bar = |v: u64| if v == 7 { None } else { Some(v as u8) };
        Control {
            stall: (c & 0xf) as u8,
            yield_flag: (c >> 4) & 1 == 1,
            write_barrier: bar((c >> 5) & 7),
            read_barrier: bar((c >> 8) & 7),
            wait_mask: ((c >> 11) & 0x3f) as u8,
        }
    }
}

/// One SASS instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassInstr {
    /// Byte offset in the function.
    pub offset: u32,
    /// Guard predicate as written (`@P0`, `@!P1`), if any.
    pub predicate: Option<String>,
    /// Full opcode with modifiers, e.g. `LDG.E.128`.
    pub opcode: String,
    /// Operands as written, split at top-level commas.
    pub operands: Vec<String>,
    pub ctrl: Control,
}

impl SassInstr {
    /// The opcode without modifiers (`LDG` for `LDG.E.128`).
    pub fn base_opcode(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// General registers named in operand `i` (a 64-bit or vector access `R4.64` names only R4;
    /// use [`SassInstr::dest_registers`] for the width).
    pub fn registers_in(&self, i: usize) -> Vec<u32> {
        self.operands
            .get(i)
            .map(|op| registers_of(op))
            .unwrap_or_default()
    }

    /// Destination registers of a load: `LDG.E.128 R4` writes R4..R7, `.64` two registers, else
    /// one; a texture fetch (`TEX`, `TLD`, `TLD4`, `TXD`) names up to two destination register
    /// pairs in its first two operands (over-approximated as both registers of each pair).
    pub fn dest_registers(&self) -> Vec<u32> {
        if self.base_opcode().starts_with('T') {
            return (0..2)
                .flat_map(|k| self.registers_in(k))
                .flat_map(|r| [r, r + 1])
                .collect();
        }
        let width = if self.opcode.contains(".128") {
            4
        } else if self.opcode.contains(".64") {
            2
        } else {
            1
        };
        self.registers_in(0)
            .first()
            .map(|&r| (r..r + width).collect())
            .unwrap_or_default()
    }

    /// Every general register read by the instruction: all operands after the destinations
    /// (`n_dest` of them), including address registers and their 64-bit pair.
    pub fn source_registers(&self, n_dest: usize) -> Vec<u32> {
        let mut v = Vec::new();
        for op in self.operands.iter().skip(n_dest) {
            for r in registers_of(op) {
                v.push(r);
                if op.contains(&format!("R{r}.64")) {
                    v.push(r + 1);
                }
            }
        }
        v
    }

    /// True for a read of the cycle counter (`CS2R`, `S2R`, `S2UR` of `SR_CLOCKLO`).
    pub fn is_clock_read(&self) -> bool {
        matches!(self.base_opcode(), "CS2R" | "S2R" | "S2UR")
            && self.operands.iter().any(|o| o.contains("SR_CLOCKLO"))
    }
}

fn registers_of(op: &str) -> Vec<u32> {
    let mut v = Vec::new();
    let b = op.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts =
            b[i] == b'R' && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if starts {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let word_end = j >= b.len() || !(b[j].is_ascii_alphanumeric() || b[j] == b'_');
            if j > i + 1
                && word_end
                && let Ok(n) = op[i + 1..j].parse()
            {
                v.push(n);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    v
}

/// One function of a SASS listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassFunction {
    pub name: String,
    pub instrs: Vec<SassInstr>,
}

impl SassFunction {
    /// Where its reads of the cycle counter stand, in order (indices into `instrs`).
    pub fn clock_reads(&self) -> Vec<usize> {
        (0..self.instrs.len())
            .filter(|&i| self.instrs[i].is_clock_read())
            .collect()
    }
}

/// How many global loads (`LDG`) of `instrs` are in flight each time the warp first waits for
/// one after issuing more: at an instruction whose wait mask names a scoreboard that loads set,
/// the loads issued and not yet waited for, on any scoreboard. What ptxas keeps in flight per
/// warp: a wait on a scoreboard waits for every load that set it.
pub fn loads_in_flight_at_waits(instrs: &[SassInstr]) -> Vec<usize> {
    // Loads not yet waited for, by scoreboard (a 3-bit field; 7 decodes to none).
    let (mut counts, mut pending, mut issued) = (Vec::new(), [0usize; 8], false);
    for i in instrs {
        let waits = |b: usize| i.ctrl.wait_mask >> b & 1 == 1;
        if (0..6).any(|b| waits(b) && pending[b] > 0) {
            if issued {
                counts.push(pending.iter().sum());
                issued = false;
            }
            (0..6).filter(|&b| waits(b)).for_each(|b| pending[b] = 0);
        }
        if i.base_opcode() == "LDG"
            && let Some(b) = i.ctrl.write_barrier
        {
            pending[usize::from(b)] += 1;
            issued = true;
        }
    }
    counts
}

/// Parses `cuobjdump -sass` (or `nvdisasm -hex`) output: functions and instructions with their
/// control bits. Lines it does not recognise are skipped.
pub fn parse_sass(text: &str) -> Vec<SassFunction> {
    let mut funcs: Vec<SassFunction> = Vec::new();
    let mut pending: Option<(u32, String)> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function : ") {
            funcs.push(SassFunction {
                name: name.trim().to_string(),
                instrs: Vec::new(),
            });
            pending = None;
            continue;
        }
        if let Some(name) = t.strip_prefix(".text.").and_then(|n| n.strip_suffix(':')) {
            funcs.push(SassFunction {
                name: name.to_string(),
                instrs: Vec::new(),
            });
            pending = None;
            continue;
        }
        // Instruction line: /*0010*/  CS2R R4, SR_CLOCKLO ;  /* 0x...lo */
        if let Some(rest) = t.strip_prefix("/*")
            && let Some(end) = rest.find("*/")
            && let Ok(off) = u32::from_str_radix(&rest[..end], 16)
        {
            let body = rest[end + 2..].trim();
            if let Some(semi) = body.find(';') {
                pending = Some((off, body[..semi].trim().to_string()));
            }
            continue;
        }
        // Second encoding line: /* 0x...hi */ completes the pending instruction.
        if let Some(hex) = t.strip_prefix("/* 0x").and_then(|h| h.strip_suffix(" */"))
            && let Some((off, asm)) = pending.take()
            && let Ok(hi) = u64::from_str_radix(hex, 16)
            && let Some(f) = funcs.last_mut()
        {
            f.instrs
                .push(parse_instr(off, &asm, Control::from_high_word(hi)));
        }
    }
    funcs
}

fn parse_instr(offset: u32, asm: &str, ctrl: Control) -> SassInstr {
    let mut rest = asm.trim();
    let mut predicate = None;
    if rest.starts_with('@') {
        let (p, r) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        predicate = Some(p.to_string());
        rest = r.trim();
    }
    let (opcode, ops) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let mut operands = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in ops.chars() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            operands.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        operands.push(cur.trim().to_string());
    }
    SassInstr {
        offset,
        predicate,
        opcode: opcode.to_string(),
        operands,
        ctrl,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bits_decode_a_load_and_its_consumer() {
        // LDG sets write barrier 2; the STG that stores its value waits on scoreboard 2.
        let ldg = Control::from_high_word(0x000e_a200_0c1e_1900);
        assert_eq!(ldg.write_barrier, Some(2));
        assert_eq!(ldg.read_barrier, None);
        assert_eq!(ldg.wait_mask, 0);
        let stg = Control::from_high_word(0x0041_e200_0c11_5906);
        assert_eq!(stg.wait_mask, 0b100);
        assert_eq!(stg.write_barrier, None);
    }

    #[test]
    fn parses_predicates_operands_and_registers() {
        let text = "Function : f\n /*0500*/ @!P1 STG.E.STRONG.SYS desc[UR6][R10.64+0x5c], R13 ; /* 0x00005c0d0a009986 */\n /* 0x0041e2000c115906 */\n";
        let f = parse_sass(text);
        let i = &f[0].instrs[0];
        assert_eq!(i.offset, 0x500);
        assert_eq!(i.predicate.as_deref(), Some("@!P1"));
        assert_eq!(i.base_opcode(), "STG");
        assert_eq!(i.operands.len(), 2);
        assert_eq!(i.source_registers(0), vec![10, 11, 13]);
        assert!(!i.is_clock_read());
    }

    #[test]
    fn load_destinations_follow_the_access_width() {
        let sass = "Function : f\n /*0010*/ LDG.E.128 R4, desc[UR6][R2.64] ; /* 0x0 */\n /* 0x000ea2000c1e1d00 */\n\
                    /*0020*/ LDG.E.U8 R9, desc[UR6][R2.64] ; /* 0x0 */\n /* 0x000ea2000c1e1d00 */\n\
                    /*0030*/ TEX.LL RZ, R6, R6, R17, UR4, 0x0, 2D, 0x3 ; /* 0x0 */\n /* 0x000ea2000c1e1d00 */\n";
        let f = parse_sass(sass);
        assert_eq!(f[0].instrs[0].dest_registers(), vec![4, 5, 6, 7]);
        assert_eq!(f[0].instrs[1].dest_registers(), vec![9]);
        assert_eq!(f[0].instrs[2].dest_registers(), vec![6, 7]);
    }

    #[test]
    fn a_first_wait_after_loads_counts_every_load_in_flight() {
        // The high word of an instruction with write barrier `wb` and wait mask `wait` (7: no
        // barrier; no read barrier).
        let high = |wb: u64, wait: u64| (wait << 11 | 7 << 8 | wb << 5) << 41;
        let line = |off: u32, text: &str, wb: u64, wait: u64| {
            format!(
                " /*{off:04x}*/ {text} ; /* 0x0 */\n /* {:#018x} */\n",
                high(wb, wait)
            )
        };
        let sass = [
            "Function : f\n".to_string(),
            line(0x00, "LDG.E R2, desc[UR4][R8.64]", 3, 0),
            line(0x10, "LDG.E R3, desc[UR4][R8.64+0x4]", 2, 0),
            // The first wait counts both loads in flight, whatever their scoreboards.
            line(0x20, "IADD3 R4, R2, 0x1, RZ", 7, 0b1000),
            // A wait with no load issued since the last one is not counted again.
            line(0x30, "STG.E desc[UR4][R10.64], R3", 7, 0b100),
            line(0x40, "LDG.E R5, desc[UR4][R8.64+0x8]", 4, 0),
            line(0x50, "LDG.E R6, desc[UR4][R8.64+0xc]", 4, 0),
            line(0x60, "LDG.E R7, desc[UR4][R8.64+0x10]", 4, 0),
            line(0x70, "LOP3.LUT R6, R6, R7, R5, 0x96, !PT", 7, 0b10000),
            // Nothing waits for the last load.
            line(0x80, "LDG.E R9, desc[UR4][R8.64+0x14]", 5, 0),
        ]
        .concat();
        let f = parse_sass(&sass);
        assert_eq!(f[0].instrs.len(), 9);
        assert_eq!(loads_in_flight_at_waits(&f[0].instrs), vec![2, 3]);
    }

    #[test]
    fn register_names_are_whole_words() {
        assert_eq!(registers_of("SR_CLOCKLO"), Vec::<u32>::new());
        assert_eq!(registers_of("RZ"), Vec::<u32>::new());
        assert_eq!(registers_of("R12.reuse"), vec![12]);
        assert_eq!(registers_of("UR4"), Vec::<u32>::new());
    }
}
