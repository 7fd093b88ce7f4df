//! The OTF2 writer: the definitions as typed data ([`Defs`]), filled while the events are
//! written location by location, then written as the archive's global definitions.

use super::ffi::{
    Archive, AttrValue, ChunkSizes, EvtWriter, GlobalDefs, GroupType, LocationType, Otf2,
    RegionRole, TYPE_STRING, TYPE_UINT32, TYPE_UINT64,
};
use crate::error::ExportError;
use crate::formats::site_label;
use crate::options::{ExportOptions, ExportSummary, TimelineMapping, clock_hz};
use crate::source::TraceSource;
use crate::timeline::{Ev, Layout, WarpEvents};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use trace::LaunchInfo;

/// The archive's name: Vampir opens `DIR/traces.otf2` (Score-P's name, which tools expect).
pub const ARCHIVE_NAME: &str = "traces";

/// OTF2's buffer sizes, the smallest chunks the library takes (256 KiB; a definitions chunk must
/// also hold 10 bytes per location, up to the library's 16 MiB ceiling). Every location's event
/// writer and local definitions writer takes a chunk, and touching fresh chunk memory for each of
/// thousands of locations cost more than writing their events: at the library's default sizes
/// (1 MiB and 4 MiB) the bench's 512 locations took three times as long. A chunk still holds
/// thousands of events; a location's chunks are written out when its writer closes, or when
/// they fill the library's memory pool.
const EVENT_CHUNK_BYTES: u64 = 256 << 10;
const MIN_DEF_CHUNK_BYTES: u64 = 256 << 10;
const MAX_DEF_CHUNK_BYTES: u64 = 16 << 20;
/// Read buffer of the one warp streamed at a time.
const READ_BUFFER_BYTES: usize = 1 << 16;

/// The attributes events carry; the discriminant is the attribute's reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attr {
    BlockX,
    BlockY,
    BlockZ,
    Warp,
    GlobalWarp,
    ProbeMode,
    Clock,
    RawStart,
    RawEnd,
    Dropped,
}

impl Attr {
    const ALL: [Attr; 10] = [
        Attr::BlockX,
        Attr::BlockY,
        Attr::BlockZ,
        Attr::Warp,
        Attr::GlobalWarp,
        Attr::ProbeMode,
        Attr::Clock,
        Attr::RawStart,
        Attr::RawEnd,
        Attr::Dropped,
    ];

    /// Name, description and OTF2 type.
    fn def(self) -> (&'static str, &'static str, u8) {
        match self {
            Attr::BlockX => ("block x", "the warp's block index, x", TYPE_UINT32),
            Attr::BlockY => ("block y", "the warp's block index, y", TYPE_UINT32),
            Attr::BlockZ => ("block z", "the warp's block index, z", TYPE_UINT32),
            Attr::Warp => ("warp", "the warp's index within its block", TYPE_UINT32),
            Attr::GlobalWarp => (
                "global warp",
                "linear block index × warps per block + warp",
                TYPE_UINT32,
            ),
            Attr::ProbeMode => (
                "probe mode",
                "how the probes closed each measured access",
                TYPE_STRING,
            ),
            Attr::Clock => (
                "clock",
                "why this access is drawn at a corrected time: wrapped (end < start) or reordered (it starts before the previous event)",
                TYPE_STRING,
            ),
            Attr::RawStart => (
                "start",
                "the access's start clock as logged, cycles",
                TYPE_UINT64,
            ),
            Attr::RawEnd => (
                "end",
                "the access's end clock as logged, cycles",
                TYPE_UINT64,
            ),
            Attr::Dropped => (
                "dropped records",
                "records the warp's full log had no room for",
                TYPE_UINT64,
            ),
        }
    }
}

/// The one metric: its member and class share reference 0.
const ACCESS_TIME: u32 = 0;
/// The kernel's region; the sites' follow.
const KERNEL_REGION: u32 = 0;

/// Strings, numbered in the order they are first asked for.
#[derive(Default)]
struct Strings {
    ids: HashMap<String, u32>,
    list: Vec<String>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(s.to_string(), id);
        self.list.push(s.to_string());
        id
    }
}

struct Region {
    name: u32,
    description: u32,
    role: RegionRole,
}

struct Group {
    name: u32,
    kind: GroupType,
    node: u32,
    creator: Option<u32>,
}

struct Location {
    name: u32,
    kind: LocationType,
    group: u32,
    events: u64,
}

/// Every global definition of the archive, in reference order.
struct Defs {
    strings: Strings,
    /// `(name, class, parent)`.
    nodes: Vec<(u32, u32, Option<u32>)>,
    groups: Vec<Group>,
    locations: Vec<Location>,
    regions: Vec<Region>,
    /// Site id → region reference.
    site_regions: BTreeMap<u16, u32>,
    resolution: u64,
    /// The last event's tick.
    end: u64,
}

/// System tree nodes.
const HOST_NODE: u32 = 0;
const DEVICE_NODE: u32 = 1;
/// The host's location group.
const HOST_GROUP: u32 = 0;

impl Defs {
    /// The definitions known before any event: tree, groups and locations of `lines` (sorted),
    /// the kernel's and the declared sites' regions.
    fn new(
        launch: &LaunchInfo,
        lines: &[(u64, u64)],
        mapping: TimelineMapping,
        resolution: u64,
    ) -> Defs {
        let mut strings = Strings::default();
        let machine = strings.id("machine");
        let host = strings.id("host");
        let nodes = vec![
            (host, machine, None),
            (
                strings.id(device_name(launch)),
                strings.id("accelerator"),
                Some(HOST_NODE),
            ),
        ];
        let mut groups = vec![Group {
            name: host,
            kind: GroupType::Process,
            node: HOST_NODE,
            creator: None,
        }];
        let (rank_word, thread_word) = (mapping.rank_word(), mapping.thread_word());
        let mut locations = Vec::with_capacity(lines.len() + 1);
        let mut last_rank = None;
        for &(rank, thread) in lines {
            // Lines are sorted by rank: a new rank starts a new group.
            if last_rank != Some(rank) {
                last_rank = Some(rank);
                groups.push(Group {
                    name: strings.id(&format!("{rank_word} {rank}")),
                    kind: GroupType::Accelerator,
                    node: DEVICE_NODE,
                    creator: Some(HOST_GROUP),
                });
            }
            locations.push(Location {
                name: strings.id(&format!("{thread_word} {thread}")),
                kind: LocationType::AcceleratorStream,
                group: groups.len() as u32 - 1,
                events: 0,
            });
        }
        locations.push(Location {
            name: strings.id("host thread (not traced)"),
            kind: LocationType::CpuThread,
            group: HOST_GROUP,
            events: 0,
        });
        let mut defs = Defs {
            regions: vec![Region {
                name: strings.id(&launch.kernel),
                description: strings.id("the kernel: a warp's kernel begin to its kernel end"),
                role: RegionRole::Function,
            }],
            strings,
            nodes,
            groups,
            locations,
            site_regions: BTreeMap::new(),
            resolution,
            end: 0,
        };
        for site in &launch.sites {
            defs.add_site(site.id, &site_label(site), site.region.name());
        }
        defs
    }

    fn add_site(&mut self, site: u16, name: &str, description: &str) -> u32 {
        let id = self.regions.len() as u32;
        self.regions.push(Region {
            name: self.strings.id(name),
            description: self.strings.id(description),
            role: RegionRole::Code,
        });
        self.site_regions.insert(site, id);
        id
    }

    /// The region of `site`, made on first sight for a site the launch does not declare.
    fn site_region(&mut self, site: u16) -> u32 {
        match self.site_regions.get(&site) {
            Some(&id) => id,
            None => self.add_site(
                site,
                &format!("site {site}"),
                "a site the launch does not declare",
            ),
        }
    }

    /// Writes every definition, strings first so that each is defined before it is referenced.
    fn write(&mut self, g: &mut GlobalDefs) -> Result<(), ExportError> {
        let attrs: Vec<(u32, u32, u8)> = Attr::ALL
            .iter()
            .map(|a| {
                let (name, description, kind) = a.def();
                (self.strings.id(name), self.strings.id(description), kind)
            })
            .collect();
        let metric = (
            self.strings.id("access time"),
            self.strings
                .id("cycles from the access's start clock to its end clock"),
            self.strings.id("cycles"),
        );
        g.clock(self.resolution, 0, self.end)?;
        for (id, s) in self.strings.list.iter().enumerate() {
            g.string(id as u32, s)?;
        }
        for (id, &(name, class, parent)) in self.nodes.iter().enumerate() {
            g.system_tree_node(id as u32, name, class, parent)?;
        }
        for (id, grp) in self.groups.iter().enumerate() {
            g.location_group(id as u32, grp.name, grp.kind, grp.node, grp.creator)?;
        }
        for (id, loc) in self.locations.iter().enumerate() {
            g.location(id as u64, loc.name, loc.kind, loc.events, loc.group)?;
        }
        for (id, r) in self.regions.iter().enumerate() {
            g.region(id as u32, r.name, r.description, r.role)?;
        }
        for (id, &(name, description, kind)) in attrs.iter().enumerate() {
            g.attribute(id as u32, name, description, kind)?;
        }
        g.metric_u64(ACCESS_TIME, ACCESS_TIME, metric.0, metric.1, metric.2)
    }
}

/// Writes `src` as an OTF2 archive into the folder `dir`, which must not hold one (the folder is
/// created if missing); see the module docs for what it holds. [`crate::export`] with
/// [`crate::Format::Otf2`] writes it atomically instead.
///
/// Memory: one warp's read buffer, one location's OTF2 event buffer, and the definitions (a
/// few dozen bytes per location and string).
pub fn write_otf2<S: TraceSource + ?Sized>(
    src: &S,
    dir: &Path,
    opts: &ExportOptions,
) -> Result<ExportSummary, ExportError> {
    let lib = Otf2::shared()?;
    let launch = src.launch();
    let hz = clock_hz(launch)?.round();
    if hz < 1.0 {
        return Err(ExportError::BadClock {
            clock_mhz: launch.clock_mhz,
        });
    }
    let mapping = opts.mapping();
    let layout = Layout::scan(src, mapping)?;
    let lines: Vec<(u64, u64)> = layout.lines.iter().copied().collect();
    let mut defs = Defs::new(launch, &lines, mapping, hz as u64);
    let locations = defs.locations.len() as u64;
    let definitions = (10 * locations).max(MIN_DEF_CHUNK_BYTES);
    if definitions > MAX_DEF_CHUNK_BYTES {
        return Err(ExportError::TooLarge {
            format: "OTF2",
            what: "location count (10 bytes each of the definition chunk, at most 16 MiB)",
            value: locations,
            max: MAX_DEF_CHUNK_BYTES / 10,
        });
    }
    let description = format!(
        "warpscope: launch {} of kernel {} on {} ({}), probe mode {}, {} MHz; ticks are cycles since each SM's earliest kernel begin",
        launch.launch,
        launch.kernel,
        device_name(launch),
        launch.backend,
        launch.mode.name(),
        launch.clock_mhz
    );
    let mut archive = Archive::create(
        &lib,
        dir,
        ARCHIVE_NAME,
        ChunkSizes {
            events: EVENT_CHUNK_BYTES,
            definitions,
        },
        concat!("warpscope ", env!("CARGO_PKG_VERSION")),
        &description,
    )?;

    // Warps by line, each line's in start order (`starts` is sorted by start, and the sort is
    // stable). Every line has a warp, so the n-th run of warps is the n-th line: location n.
    let mut order: Vec<((u64, u64), u32)> = layout
        .starts
        .iter()
        .map(|&(_, warp)| (layout.line_of[warp as usize], warp))
        .collect();
    order.sort_by_key(|&(line, _)| line);
    let events = EventWriter {
        src,
        layout: &layout,
        mode: defs.strings.id(launch.mode.name()),
        wrapped: defs.strings.id("wrapped"),
        reordered: defs.strings.id("reordered"),
    };
    let mut summary = ExportSummary {
        warps: layout.warps,
        dropped: layout.dropped,
        ..Default::default()
    };
    for (location, warps) in order.chunk_by(|a, b| a.0 == b.0).enumerate() {
        let mut w = archive.events(location as u64)?;
        let last = events.location(&mut w, warps, &mut defs, &mut summary)?;
        defs.end = defs.end.max(last);
        defs.locations[location].events = w.event_count()?;
        w.close()?;
    }
    // The host thread: an empty event file, which readers open like every location's.
    let host = locations - 1;
    archive.events(host)?.close()?;
    archive.finish_locations(0..locations)?;
    defs.write(&mut archive.global_defs()?)?;
    archive.close()?;
    summary.bytes = folder_bytes(dir)?;
    Ok(summary)
}

/// Writes the events of warps, with the strings their attributes name.
struct EventWriter<'a, S: ?Sized> {
    src: &'a S,
    layout: &'a Layout,
    mode: u32,
    wrapped: u32,
    reordered: u32,
}

impl<S: TraceSource + ?Sized> EventWriter<'_, S> {
    /// Writes the `(line, warp index)` `warps` of one location, in their order; returns the
    /// location's last tick.
    fn location(
        &self,
        w: &mut EvtWriter,
        warps: &[((u64, u64), u32)],
        defs: &mut Defs,
        summary: &mut ExportSummary,
    ) -> Result<u64, ExportError> {
        // The last tick written on this location.
        let mut clock = 0u64;
        for &(line, warp) in warps {
            let (header, records) = self.src.open_warp(warp as usize, READ_BUFFER_BYTES)?;
            let dropped = header.dropped > 0;
            let base = self.layout.base(header.sm.0);
            let mut events = WarpEvents::new(header, records, line, base, warp);
            // How far this warp is moved so that it starts no earlier than the location's last
            // event (set at its first event, the kernel begin).
            let mut shift = None;
            while let Some(e) = events.next_event()? {
                let shift = *shift.get_or_insert(clock.saturating_sub(e.cycles));
                let t = e.cycles.saturating_add(shift);
                match e.ev {
                    Ev::LifeBegin => {
                        let h = e.header;
                        w.attr(Attr::BlockX as u32, AttrValue::U32(h.block[0]))?;
                        w.attr(Attr::BlockY as u32, AttrValue::U32(h.block[1]))?;
                        w.attr(Attr::BlockZ as u32, AttrValue::U32(h.block[2]))?;
                        w.attr(Attr::Warp as u32, AttrValue::U32(h.warp))?;
                        w.attr(Attr::GlobalWarp as u32, AttrValue::U32(h.global_warp))?;
                        w.attr(Attr::ProbeMode as u32, AttrValue::Str(self.mode))?;
                        w.enter(t, KERNEL_REGION)?;
                    }
                    Ev::AccessBegin { rec, anomaly } => {
                        let wrapped = rec.wrapped();
                        let moved = anomaly || shift > 0;
                        summary.records += 1;
                        summary.wrapped += wrapped as u64;
                        summary.reordered += (moved && !wrapped) as u64;
                        if moved {
                            let why = if wrapped {
                                self.wrapped
                            } else {
                                self.reordered
                            };
                            w.attr(Attr::Clock as u32, AttrValue::Str(why))?;
                            w.attr(Attr::RawStart as u32, AttrValue::U64(rec.start.0))?;
                            w.attr(Attr::RawEnd as u32, AttrValue::U64(rec.end.0))?;
                        }
                        w.enter(t, defs.site_region(rec.site))?;
                    }
                    Ev::AccessEnd { rec, .. } => {
                        if !rec.wrapped() {
                            w.metric_u64(t, ACCESS_TIME, rec.duration().0)?;
                        }
                        w.leave(t, defs.site_region(rec.site))?;
                    }
                    Ev::Dropped { n } => {
                        w.attr(Attr::Dropped as u32, AttrValue::U64(n as u64))?;
                        w.measurement(t, false)?;
                    }
                    Ev::LifeEnd => {
                        if dropped {
                            w.measurement(t, true)?;
                        }
                        w.leave(t, KERNEL_REGION)?;
                    }
                }
                clock = t;
            }
        }
        Ok(clock)
    }
}

/// The device's name, or the backend's where the launch names none.
fn device_name(launch: &LaunchInfo) -> &str {
    if launch.device.is_empty() {
        &launch.backend
    } else {
        &launch.device
    }
}

/// The bytes of every file under `dir`.
fn folder_bytes(dir: &Path) -> Result<u64, ExportError> {
    let io = |e| ExportError::Io {
        path: dir.to_path_buf(),
        source: e,
    };
    let mut total = 0;
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let meta = entry.metadata().map_err(io)?;
        total += if meta.is_dir() {
            folder_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}
