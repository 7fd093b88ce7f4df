//! The register budget of a probed build, and ptxas resource usage.
//!
//! Why a budget: the probes add live values (the warp's state, the opening clock) to the kernel's
//! peak register pressure, and more registers per thread can mean fewer resident blocks per SM —
//! the measurement changing what it measures. So every entry of a probed build is assembled with
//! `.maxnreg` set to the bare entry's register count rounded up to the finest register allocation
//! granularity of any supported part (2 per thread on Fermi; 8 from Kepler on), which keeps the
//! bare kernel's occupancy on every preset and GPU — but never below 24, ptxas's lower bound for
//! sm_75 ("adjusting per thread register count of 16 to lower bound of 24"). A kernel of fewer
//! than 24 registers can therefore still lose occupancy (e.g. 192-thread blocks on Fermi), which is
//! why the host compares the bare and probed occupancy of every launch and reports both. Spills the budget forces are reported
//! ([`EntryUsage::spill_bytes`]), never hidden.
//!
//! This file is also compiled into `build.rs` (`#[path]`), so the embedded builds and run-time
//! compilation (`compile_ptx`) share one definition.

/// Registers per thread are allocated in multiples of this on the finest-grained supported part
/// (Fermi: 64 registers per warp; Kepler and later: 256 per warp, a multiple of it).
pub const REGISTER_GRANULE: u32 = 2;

/// ptxas raises a smaller `.maxnreg` to this for sm_75.
pub const MIN_MAXNREG: u32 = 24;

/// ptxas resource usage of one entry (sm_75).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryUsage {
    pub name: String,
    pub registers: u32,
    pub static_shared_bytes: u32,
    /// Bytes of spill stores plus spill loads.
    pub spill_bytes: u32,
}

/// The register budget of a probed entry whose bare build uses `bare` registers.
pub fn register_budget(bare: u32) -> u32 {
    bare.next_multiple_of(REGISTER_GRANULE).max(MIN_MAXNREG)
}

/// `ptx` with a `.maxnreg` directive on every entry named in `budgets` (name, registers). The
/// directive goes between an entry's parameter list and its body, where PTX puts performance
/// directives; an entry that already has one keeps the smaller.
pub fn with_maxnreg(ptx: &str, budgets: &[(String, u32)]) -> String {
    let mut out = String::with_capacity(ptx.len() + 32 * budgets.len());
    let mut pending: Option<u32> = None;
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(name) = entry_name(line) {
            pending = budgets.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
        } else if let Some(n) = pending
            && let Some(v) = t.strip_prefix(".maxnreg")
        {
            let existing = v.trim().parse::<u32>().unwrap_or(n);
            out.push_str(&format!(".maxnreg {}\n", existing.min(n)));
            pending = None;
            continue;
        } else if let Some(n) = pending
            && t == "{"
        {
            out.push_str(&format!(".maxnreg {n}\n"));
            pending = None;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The entry declared on this PTX line, if any.
pub fn entry_name(line: &str) -> Option<String> {
    let pos = line.find(".entry ")?;
    let name: String = line[pos + 7..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Entries in PTX order with their usage from a `ptxas -v` log (entries the log does not mention
/// get zeros).
pub fn parse_entries(ptx: &str, log: &str) -> Vec<EntryUsage> {
    let names: Vec<String> = ptx.lines().filter_map(entry_name).collect();
    let mut usage: Vec<EntryUsage> = Vec::new();
    let mut current: Option<String> = None;
    let mut spill = 0u32;
    for line in log.lines() {
        if let Some(p) = line.find("Compiling entry function '") {
            current = line[p + 26..].split('\'').next().map(str::to_string);
            spill = 0;
        } else if line.contains("bytes spill stores") {
            spill = number_before(line, " bytes spill stores").unwrap_or(0)
                + number_before(line, " bytes spill loads").unwrap_or(0);
        } else if let (Some(name), Some(p)) = (&current, line.find("Used ")) {
            let tail = &line[p..];
            usage.push(EntryUsage {
                name: name.clone(),
                registers: number_before(tail, " registers").unwrap_or(0),
                static_shared_bytes: number_before(tail, " bytes smem").unwrap_or(0),
                spill_bytes: spill,
            });
        }
    }
    names
        .into_iter()
        .map(|n| {
            usage
                .iter()
                .find(|u| u.name == n)
                .cloned()
                .unwrap_or(EntryUsage {
                    name: n,
                    registers: 0,
                    static_shared_bytes: 0,
                    spill_bytes: 0,
                })
        })
        .collect()
}

fn number_before(s: &str, suffix: &str) -> Option<u32> {
    let end = s.find(suffix)?;
    let head = &s[..end];
    let start = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map(|i| i + 1)
        .unwrap_or(0);
    head[start..].parse().ok()
}
