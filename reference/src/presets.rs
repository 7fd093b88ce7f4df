//! `presets.md`: the built-in GPUs side by side, then the configuration's schema.

use crate::markdown::table;
use crate::schema::{Absent, sections};
use crate::{Page, ReferenceError};
use emulator::GpuConfig;

/// The keys that set one GPU apart from another, as the configuration names them; their values
/// are read from each preset's configuration. `warpscope presets NAME` prints every key.
const KEYS: &[&str] = &[
    "clock_mhz",
    "sm.count",
    "sm.max_warps",
    "sm.max_blocks",
    "sm.registers",
    "sm.shared_bytes",
    "sm.warp_schedulers",
    "l1.size_bytes",
    "l1.latency_cycles",
    "texture.unified_with_l1",
    "l2.size_bytes",
    "l2.slices",
    "l2.latency_cycles",
    "l2.bandwidth_bytes_per_cycle",
    "dram.latency_cycles",
    "dram.bandwidth_bytes_per_cycle",
];

/// The end-to-end latencies the components add up to (`GpuConfig::unloaded_latencies`).
const UNLOADED: &[&str] = &["l1_hit", "l2_hit", "dram", "texture_hit", "shared"];

/// The value at a dotted key of a serialized configuration.
fn at(value: &serde_json::Value, key: &str) -> Result<String, ReferenceError> {
    let pointer = format!("/{}", key.replace('.', "/"));
    value
        .pointer(&pointer)
        .map(ToString::to_string)
        .ok_or_else(|| ReferenceError::Mismatch {
            what: "the presets table",
            why: format!("a preset has no key `{key}`"),
        })
}

pub fn page() -> Result<Page, ReferenceError> {
    let names = GpuConfig::preset_names();
    let presets = (names.iter())
        .map(|n| GpuConfig::preset(n))
        .collect::<Result<Vec<_>, _>>()?;
    let mut header = vec!["key"];
    header.extend(names.iter().copied());
    let mut rows = Vec::new();
    let values = |v: fn(&GpuConfig) -> serde_json::Value| -> Vec<serde_json::Value> {
        presets.iter().map(v).collect()
    };
    let configs = values(|c| serde_json::to_value(c).unwrap_or_default());
    let unloaded = values(|c| serde_json::to_value(c.unloaded_latencies()).unwrap_or_default());
    for (keys, label, of) in [(KEYS, "", &configs), (UNLOADED, "unloaded ", &unloaded)] {
        for key in keys {
            let mut row = vec![format!("{label}`{key}`")];
            for v in of {
                row.push(at(v, key)?);
            }
            rows.push(row);
        }
    }
    // Unset in most presets: the count the model then uses, after the other keys.
    let partitions = presets.iter().map(|c| c.dram.partition_count().to_string());
    rows.insert(
        KEYS.len(),
        std::iter::once("`dram.partitions`".to_owned())
            .chain(partitions)
            .collect(),
    );
    let body = format!(
        "`--preset NAME` picks one; `--config FILE` reads a configuration of your own in the \
         same TOML, every key required unless it has a default, or only the keys that differ \
         from a preset named by `base = \"NAME\"` at the top (its `name` is `custom` unless it \
         gives one). `warpscope presets NAME` prints a preset's whole configuration, a good \
         start for your own. Each preset's file cites \
         the source of every number (`emulator/src/presets/`).\n\n\
         ## The presets\n\n{}\n\
         The unloaded latencies, in cycles from issue, are what a dependent pointer chase sees \
         on an idle GPU: the components below (`*.latency_cycles`) add up along a request's \
         path.\n\n\
         ## The configuration\n\n{}",
        table(&header, &rows),
        sections(
            &schemars::schema_for!(GpuConfig),
            "Top level",
            Absent::Omitted
        )
    );
    Ok(crate::page(
        "presets.md",
        "GPU presets",
        "The GPUs the emulator models (`--preset`) and every key of an emulator configuration \
         (`--config`).",
        &body,
    ))
}
