//! A throughput bound of a memory hierarchy, in the spirit of PMNet: given how many bytes each
//! component moved and how many operations the SMs did, no run can be faster than the busiest
//! component, so T_est = max over components of busy time, and that component is the bottleneck.
//!
//! Why: the roofline says *whether* a run is memory-bound; the bound says *which* component of the
//! topology (L1/TEX, L2, DRAM, the arithmetic units) limits it and how far the simulated time is
//! from that limit (T_est / T_sim; 1 means the component ran flat out the whole kernel).
//!
//! Main items: [`Hierarchy`] (components and edges; typed TOML with [`Hierarchy::from_toml_str`] /
//! [`Hierarchy::to_toml`], errors that name the field), [`Component`], [`Edge`],
//! [`Hierarchy::from_config`] (the hierarchy an emulator configuration models), [`RunBound`] /
//! [`run_bound`], [`Hierarchy::to_dot`].
//!
//! # The bound
//! Component c with read bytes R, written bytes W, read bandwidth r and write bandwidth w (bytes
//! per cycle, summed over its instances) is busy R/r + W/w cycles: a port either reads or writes
//! in a cycle. The compute component is busy ops / (ops per cycle). T_est = max busy;
//! ratio = T_est / T_sim.
//! Traffic per component from the emulator's counters: L1/TEX reads = (hits + misses + MSHR
//! merges) sectors of the L1 and texture caches, writes = written sectors; L2 the same with its
//! sector size; DRAM = bytes read / written.
//! Per-phase bounds: a run is one frame, so the per-run bound is the per-frame bound; windows
//! within a kernel are not possible because the emulator reports its counters once per launch
//! (no per-window counters are recorded).
//!
//! # Example
//! ```
//! use analysis::Hierarchy;
//! let h = Hierarchy::example();
//! let text = h.to_toml();
//! assert_eq!(Hierarchy::from_toml_str(&text, "h.toml").unwrap(), h);
//! let bad = text.replace("read_bytes_per_cycle = 128.0", "read_bytes_per_cycle = -1.0");
//! let e = Hierarchy::from_toml_str(&bad, "h.toml").unwrap_err().to_string();
//! assert!(e.starts_with("h.toml: components[2].read_bytes_per_cycle"), "{e}");
//! ```

use super::model::{PerCycle, RunCounters};
use crate::AnalysisError;
use crate::fmt::{pct, sig};
use emulator::GpuConfig;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// What a component is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComponentKind {
    /// Arithmetic units; bandwidth fields count operations per cycle.
    Compute,
    Cache,
    Memory,
}

/// One component of the hierarchy. Bandwidths are totals over `instances`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// `sm`, `l1`, `l2`, `dram` for the counters to find it.
    pub name: String,
    pub kind: ComponentKind,
    pub instances: u32,
    /// Total over instances; 0 for compute and memory.
    #[serde(default)]
    pub capacity_bytes: u64,
    #[serde(default)]
    pub associativity: u32,
    #[serde(default)]
    pub line_bytes: u32,
    /// Bytes (ops for compute) per cycle.
    pub read_bytes_per_cycle: f64,
    pub write_bytes_per_cycle: f64,
}

impl Component {
    /// A component that reads and writes at the same rate `bw`.
    fn symmetric(
        name: &str,
        kind: ComponentKind,
        instances: u32,
        capacity_bytes: u64,
        associativity: u32,
        line_bytes: u32,
        bw: f64,
    ) -> Component {
        Component {
            name: name.into(),
            kind,
            instances,
            capacity_bytes,
            associativity,
            line_bytes,
            read_bytes_per_cycle: bw,
            write_bytes_per_cycle: bw,
        }
    }
}

/// Data flows from `from` to `to` (names of components).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub from: String,
    pub to: String,
}

/// A memory hierarchy: components and the edges between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hierarchy {
    pub name: String,
    pub clock_mhz: f64,
    pub components: Vec<Component>,
    pub edges: Vec<Edge>,
}

impl Hierarchy {
    /// The hierarchy the emulator models for `cfg`: SM compute, L1/TEX (per SM), L2 slices, DRAM.
    pub fn from_config(cfg: &GpuConfig) -> Hierarchy {
        let sms = cfg.sm.count;
        let p = PerCycle::of(cfg);
        let c = Component::symmetric;
        Hierarchy {
            name: cfg.name.clone(),
            clock_mhz: cfg.clock_mhz,
            components: vec![
                c("sm", ComponentKind::Compute, sms, 0, 0, 0, p.flops),
                c(
                    "l1",
                    ComponentKind::Cache,
                    sms,
                    u64::from(cfg.l1.size_bytes) * u64::from(sms),
                    cfg.l1.ways,
                    cfg.l1.line_bytes,
                    p.l1_bytes,
                ),
                c(
                    "l2",
                    ComponentKind::Cache,
                    cfg.l2.slices,
                    cfg.l2.size_bytes,
                    cfg.l2.ways,
                    cfg.l2.line_bytes,
                    p.l2_bytes,
                ),
                c("dram", ComponentKind::Memory, 1, 0, 0, 0, p.dram_bytes),
            ],
            edges: vec![
                Edge {
                    from: "sm".into(),
                    to: "l1".into(),
                },
                Edge {
                    from: "l1".into(),
                    to: "l2".into(),
                },
                Edge {
                    from: "l2".into(),
                    to: "dram".into(),
                },
            ],
        }
    }

    /// A small made-up hierarchy for examples and tests (not a preset): 2 SMs of 128 FP32 ops
    /// per cycle, L1 128 B/cycle each, 4 L2 slices of 32 B/cycle, DRAM 64 B/cycle, at 1 GHz.
    pub fn example() -> Hierarchy {
        let c = Component::symmetric;
        let edge = |from: &str, to: &str| Edge {
            from: from.into(),
            to: to.into(),
        };
        Hierarchy {
            name: "example".into(),
            clock_mhz: 1000.0,
            components: vec![
                c("sm", ComponentKind::Compute, 2, 0, 0, 0, 256.0),
                c("l1", ComponentKind::Cache, 2, 65536, 4, 128, 256.0),
                c("l2", ComponentKind::Cache, 4, 262144, 8, 128, 128.0),
                c("dram", ComponentKind::Memory, 1, 0, 0, 0, 64.0),
            ],
            edges: vec![edge("sm", "l1"), edge("l1", "l2"), edge("l2", "dram")],
        }
    }

    /// Parses and validates TOML; errors name `origin` and the field (`components[2].ways`).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Hierarchy, AnalysisError> {
        let h: Hierarchy = toml::from_str(text).map_err(|e| AnalysisError::Toml {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        h.validate(origin)?;
        Ok(h)
    }

    /// The hierarchy as TOML.
    pub fn to_toml(&self) -> String {
        // Plain numbers, strings and arrays of tables always serialize; keep a panic out anyway.
        toml::to_string(self)
            .unwrap_or_else(|e| format!("# cannot write the hierarchy as TOML: {e}\n"))
    }

    /// Checks bandwidths, names and edges; the error names the field.
    pub fn validate(&self, origin: &str) -> Result<(), AnalysisError> {
        let bad = |field: String, message: String| AnalysisError::Invalid {
            origin: origin.to_string(),
            field,
            message,
        };
        if !(self.clock_mhz.is_finite() && self.clock_mhz > 0.0) {
            return Err(bad(
                "clock_mhz".into(),
                format!("must be a positive number, got {}", self.clock_mhz),
            ));
        }
        for (i, c) in self.components.iter().enumerate() {
            if c.name.is_empty() {
                return Err(bad(
                    format!("components[{i}].name"),
                    "must not be empty".into(),
                ));
            }
            if self.components[..i].iter().any(|o| o.name == c.name) {
                return Err(bad(
                    format!("components[{i}].name"),
                    format!("duplicate component {:?}", c.name),
                ));
            }
            for (f, v) in [
                ("read_bytes_per_cycle", c.read_bytes_per_cycle),
                ("write_bytes_per_cycle", c.write_bytes_per_cycle),
            ] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(bad(
                        format!("components[{i}].{f}"),
                        format!("must be a positive number, got {v}"),
                    ));
                }
            }
            if c.instances == 0 {
                return Err(bad(
                    format!("components[{i}].instances"),
                    "must be at least 1".into(),
                ));
            }
        }
        for (i, e) in self.edges.iter().enumerate() {
            for (f, n) in [("from", &e.from), ("to", &e.to)] {
                if !self.components.iter().any(|c| &c.name == n) {
                    return Err(bad(
                        format!("edges[{i}].{f}"),
                        format!("no component named {n:?}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Graphviz DOT of the hierarchy; with a bound, each node shows its traffic and busy time and
    /// the bottleneck is filled red.
    pub fn to_dot(&self, bound: Option<&RunBound>) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "digraph hierarchy {{\n  label=\"{}\";\n  rankdir=TB;\n  node [shape=box, fontname=\"sans-serif\"];",
            dot_escape(&self.name)
        );
        for c in &self.components {
            let mut label = format!("{} ×{}", c.name, c.instances);
            if c.capacity_bytes > 0 {
                let _ = write!(label, "\\n{} KiB", c.capacity_bytes / 1024);
            }
            let unit = if c.kind == ComponentKind::Compute {
                "ops"
            } else {
                "B"
            };
            let _ = write!(label, "\\n{} {unit}/cycle", sig(c.read_bytes_per_cycle));
            let mut style = String::new();
            if let Some(b) = bound
                && let Some(u) = b.components.iter().find(|u| u.name == c.name)
            {
                let _ = write!(
                    label,
                    "\\nread {} write {}\\nbusy {} cycles ({} of T_sim)",
                    sig(u.read),
                    sig(u.written),
                    sig(u.busy_cycles),
                    pct(u.busy_cycles / b.t_sim_cycles.max(1.0), 1)
                );
                if u.name == b.bottleneck {
                    style = ", style=filled, fillcolor=\"#f4a582\"".into();
                }
            }
            let _ = writeln!(
                s,
                "  \"{}\" [label=\"{}\"{style}];",
                dot_escape(&c.name),
                dot_escape_keep_newlines(&label)
            );
        }
        for e in &self.edges {
            let _ = writeln!(
                s,
                "  \"{}\" -> \"{}\";",
                dot_escape(&e.from),
                dot_escape(&e.to)
            );
        }
        s.push_str("}\n");
        s
    }
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Escapes quotes but keeps the `\n` line breaks the label was built with.
fn dot_escape_keep_newlines(s: &str) -> String {
    s.replace('"', "\\\"")
}

/// One component's traffic and busy time in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComponentUse {
    pub name: String,
    /// Bytes (ops for compute) read and written.
    pub read: f64,
    pub written: f64,
    pub busy_cycles: f64,
}

/// The bound of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunBound {
    pub components: Vec<ComponentUse>,
    pub bottleneck: String,
    pub t_est_cycles: f64,
    pub t_sim_cycles: f64,
    /// T_est / T_sim (≤ 1 when the model is a true lower bound).
    pub ratio: f64,
}

/// Traffic of the component named `name` from the counters: (read, written).
fn traffic(name: &str, c: &RunCounters, cfg: &GpuConfig) -> Option<(f64, f64)> {
    let m = &c.mem;
    match name {
        // Without instruction counts the work is unknown: leave the SMs out rather than guess.
        "sm" => c
            .has_work()
            .then(|| ((c.flops() as f64).max(c.int_ops()), 0.0)),
        "l1" => {
            let sb = f64::from(cfg.l1.sector_bytes);
            let reads = m.l1.read_sectors() + m.texture.read_sectors();
            let writes = m.l1.write_sectors + m.texture.write_sectors;
            Some((reads as f64 * sb, writes as f64 * sb))
        }
        "l2" => {
            let sb = f64::from(cfg.l2.sector_bytes);
            let reads = m.l2.read_sectors();
            Some((reads as f64 * sb, m.l2.write_sectors as f64 * sb))
        }
        "dram" => Some((m.dram_bytes_read as f64, m.dram_bytes_written as f64)),
        _ => None,
    }
}

/// The bound of one run; components the counters do not know (custom names) are skipped.
pub fn run_bound(h: &Hierarchy, c: &RunCounters, cfg: &GpuConfig) -> RunBound {
    let components: Vec<ComponentUse> = h
        .components
        .iter()
        .filter_map(|comp| {
            let (read, written) = traffic(&comp.name, c, cfg)?;
            Some(ComponentUse {
                name: comp.name.clone(),
                read,
                written,
                busy_cycles: busy_cycles(read, written, comp),
            })
        })
        .collect();
    bound_of(components, c.cycles as f64)
}

/// Busy cycles of `comp` moving `read` and `written` (see the module docs).
pub fn busy_cycles(read: f64, written: f64, comp: &Component) -> f64 {
    read / comp.read_bytes_per_cycle + written / comp.write_bytes_per_cycle
}

/// T_est, bottleneck and ratio from per-component busy times (ties: the first component).
pub fn bound_of(components: Vec<ComponentUse>, t_sim_cycles: f64) -> RunBound {
    let mut best: Option<&ComponentUse> = None;
    for u in &components {
        if best.is_none_or(|b| u.busy_cycles > b.busy_cycles) {
            best = Some(u);
        }
    }
    let (bottleneck, t_est) =
        best.map_or((String::new(), 0.0), |b| (b.name.clone(), b.busy_cycles));
    RunBound {
        ratio: if t_sim_cycles > 0.0 {
            t_est / t_sim_cycles
        } else {
            0.0
        },
        components,
        bottleneck,
        t_est_cycles: t_est,
        t_sim_cycles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchy_round_trips_through_toml() {
        let h = Hierarchy::example();
        let again = Hierarchy::from_toml_str(&h.to_toml(), "x").unwrap();
        assert_eq!(again, h);
        assert_eq!(h.components.len(), 4);
        // 2 SMs × (4 schedulers × 32 / 2) lanes × 2 flops.
        assert_eq!(h.components[0].read_bytes_per_cycle, 256.0);
        assert_eq!(h.components[2].read_bytes_per_cycle, 128.0);
    }

    #[test]
    fn toml_errors_name_the_field() {
        let text = Hierarchy::example().to_toml();
        let e = Hierarchy::from_toml_str(&text.replace("instances = 4", "instances = 0"), "h.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "h.toml: components[2].instances: must be at least 1");
        let e = Hierarchy::from_toml_str(&text.replace("to = \"dram\"", "to = \"hbm\""), "h.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("edges[2].to") && e.contains("hbm"), "{e}");
        let e = Hierarchy::from_toml_str(&text.replace("kind = \"cache\"", "kind = \"cash\""), "h")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("h:") && e.contains("cash"), "{e}");
        let e = Hierarchy::from_toml_str(
            &text.replace("associativity = 8", "associativity = 8\nways = 8"),
            "h",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("ways"), "{e}");
    }

    /// Hand-computed: 4096 B read from DRAM at 64 B/cycle = 64 cycles; L2 moves 4096 + 2048 B at
    /// 128 B/cycle = 48 cycles; L1 6144 B at 256 B/cycle = 24; 512 flops at 256/cycle = 2.
    #[test]
    fn hand_computed_bound_names_dram() {
        let spec = crate::roofline::example_gpu();
        let h = Hierarchy::from_config(&spec);
        let mut c = RunCounters {
            cycles: 80,
            clock_mhz: 1000.0,
            warp_instructions: 1,
            thread_instructions: 1,
            ..Default::default()
        };
        c.instructions_by_class.insert("flops".into(), 512);
        c.mem.l1.sector_misses = 128;
        c.mem.l1.write_sectors = 64;
        c.mem.l2.sector_misses = 128;
        c.mem.l2.write_sectors = 64;
        c.mem.dram_bytes_read = 4096;
        let b = run_bound(&h, &c, &spec);
        let busy: Vec<f64> = b.components.iter().map(|u| u.busy_cycles).collect();
        assert_eq!(busy, vec![2.0, 24.0, 48.0, 64.0]);
        assert_eq!(b.bottleneck, "dram");
        assert_eq!(b.t_est_cycles, 64.0);
        assert_eq!(b.ratio, 0.8);
        let dot = h.to_dot(Some(&b));
        assert!(dot.contains("\"dram\" [label=") && dot.contains("fillcolor"));
        assert_eq!(dot.matches("fillcolor").count(), 1);
        assert!(dot.contains("\"l1\" -> \"l2\";"));
    }

    #[test]
    fn the_example_is_the_example_configurations_hierarchy() {
        let h = Hierarchy::from_config(&crate::roofline::example_gpu());
        assert_eq!(h, Hierarchy::example());
    }
}
