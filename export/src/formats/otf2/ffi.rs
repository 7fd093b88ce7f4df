//! The OTF2 3 library, loaded at run time: the functions and types of its C API that the writer
//! uses, and safe handles over them ([`Archive`], [`EvtWriter`], [`GlobalDefs`]).
//!
//! Why loaded at run time (`libloading`, as the CUDA backend loads libcuda): the default build,
//! CI and the GPU bundle need nothing of OTF2 to build, and only `export --format otf2` needs
//! the library, on the machine where it runs. Each declaration below is copied from the OTF2
//! 3.0 headers (`/usr/include/otf2/*.h`); the shared object's version 10 is the ABI of 3.x, so
//! no other version is loaded.
//!
//! The only module of the export crate with unsafe code: calling C through function pointers
//! found by name is unsafe. Each call says why it is sound in a `SAFETY` comment; what they
//! share: the pointers are the library's own (kept loaded for the life of [`Otf2`]), handles are
//! non-null (checked when they are made) and live until the one call that closes them, and
//! strings are NUL-terminated copies that outlive the call.
#![allow(unsafe_code)]

use crate::error::ExportError;
use libloading::Library;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// The names tried, in order: upstream's, then Debian's and Ubuntu's (package
/// `libopen-trace-format2-10`). The dynamic loader searches `LD_LIBRARY_PATH` first, so a
/// Score-P or Spack installation put there is found.
const LIBRARY_NAMES: [&str; 2] = ["libotf2.so.10", "libopen-trace-format2.so.10"];

/// `OTF2_ErrorCode`, a C enum.
type ErrorCode = c_int;
const OTF2_SUCCESS: ErrorCode = 0;
/// `OTF2_UNDEFINED_UINT32`: "none" for string, system tree node and location group references.
const UNDEFINED_REF: u32 = u32::MAX;
/// `OTF2_UNDEFINED_TIMESTAMP`.
const UNDEFINED_TIMESTAMP: u64 = u64::MAX;

// Opaque handles (`OTF2_Archive`, `OTF2_EvtWriter`, …): only ever behind pointers.
enum RawArchive {}
enum RawEvtWriter {}
enum RawDefWriter {}
enum RawGlobalDefWriter {}
enum RawAttributeList {}

/// `OTF2_FileMode`, `OTF2_FileSubstrate`, `OTF2_Compression` values used.
const FILEMODE_WRITE: u8 = 0;
const SUBSTRATE_POSIX: u8 = 1;
const COMPRESSION_NONE: u8 = 1;
/// `OTF2_FLUSH`: write a full buffer to its file.
const FLUSH: u8 = 1;
/// `OTF2_MeasurementMode`.
const MEASUREMENT_ON: u8 = 1;
const MEASUREMENT_OFF: u8 = 2;
/// `OTF2_Type` values used for attributes and metric values.
pub(crate) const TYPE_UINT32: u8 = 3;
pub(crate) const TYPE_UINT64: u8 = 4;
pub(crate) const TYPE_STRING: u8 = 11;

/// `OTF2_LocationGroupType`.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub(crate) enum GroupType {
    Process = 1,
    Accelerator = 2,
}

/// `OTF2_LocationType`.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub(crate) enum LocationType {
    CpuThread = 1,
    AcceleratorStream = 2,
}

/// `OTF2_RegionRole`.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
pub(crate) enum RegionRole {
    Function = 1,
    Code = 4,
}

/// `OTF2_PARADIGM_CUDA`.
const PARADIGM_CUDA: u8 = 5;
/// `OTF2_REGION_FLAG_NONE`.
const REGION_FLAG_NONE: u32 = 0;
/// `OTF2_METRIC_TYPE_OTHER`, `OTF2_METRIC_ABSOLUTE_POINT` (`OTF2_METRIC_VALUE_ABSOLUTE |
/// OTF2_METRIC_TIMING_POINT`: each value holds at its own time), `OTF2_BASE_DECIMAL`,
/// `OTF2_METRIC_SYNCHRONOUS` (recorded at some region leaves), `OTF2_RECORDER_KIND_GPU`.
const METRIC_TYPE_OTHER: u8 = 0;
const METRIC_ABSOLUTE_POINT: u8 = 1 | (1 << 4);
const BASE_DECIMAL: u8 = 1;
const METRIC_SYNCHRONOUS: u8 = 1;
const RECORDER_KIND_GPU: u8 = 3;

/// `OTF2_FlushCallbacks`.
#[repr(C)]
struct FlushCallbacks {
    pre_flush: Option<unsafe extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8>,
    post_flush: Option<unsafe extern "C" fn(*mut c_void, u8, u64) -> u64>,
}

/// Every full buffer is written out. Without a post-flush callback OTF2 records no BufferFlush
/// event, which would otherwise appear in every location's timeline.
unsafe extern "C" fn always_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    FLUSH
}

static FLUSH_CALLBACKS: FlushCallbacks = FlushCallbacks {
    pre_flush: Some(always_flush),
    post_flush: None,
};

/// `OTF2_ErrorCallback`. Its last parameter is a C `va_list`, never read here; it is declared as
/// a pointer, which is how the x86-64 and AArch64 calling conventions pass a `va_list` argument.
type ErrorCallback = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    u64,
    *const c_char,
    ErrorCode,
    *const c_char,
    *mut c_void,
) -> ErrorCode;

/// Keeps the library quiet: by default it prints every error to stderr, and the writer reports
/// each failure once, as an [`ExportError`] naming the call, the code and the archive.
unsafe extern "C" fn quiet(
    _: *mut c_void,
    _: *const c_char,
    _: u64,
    _: *const c_char,
    code: ErrorCode,
    _: *const c_char,
    _: *mut c_void,
) -> ErrorCode {
    code
}

/// The library's entry points, with the types of the OTF2 3.0 headers.
struct Fns {
    error_get_name: unsafe extern "C" fn(ErrorCode) -> *const c_char,
    error_get_description: unsafe extern "C" fn(ErrorCode) -> *const c_char,
    error_register_callback:
        unsafe extern "C" fn(Option<ErrorCallback>, *mut c_void) -> Option<ErrorCallback>,
    archive_open:
        unsafe extern "C" fn(*const c_char, *const c_char, u8, u64, u64, u8, u8) -> *mut RawArchive,
    archive_close: unsafe extern "C" fn(*mut RawArchive) -> ErrorCode,
    archive_set_flush_callbacks:
        unsafe extern "C" fn(*mut RawArchive, *const FlushCallbacks, *mut c_void) -> ErrorCode,
    archive_set_serial_collective_callbacks: unsafe extern "C" fn(*mut RawArchive) -> ErrorCode,
    archive_set_creator: unsafe extern "C" fn(*mut RawArchive, *const c_char) -> ErrorCode,
    archive_set_description: unsafe extern "C" fn(*mut RawArchive, *const c_char) -> ErrorCode,
    archive_open_evt_files: unsafe extern "C" fn(*mut RawArchive) -> ErrorCode,
    archive_close_evt_files: unsafe extern "C" fn(*mut RawArchive) -> ErrorCode,
    archive_get_evt_writer: unsafe extern "C" fn(*mut RawArchive, u64) -> *mut RawEvtWriter,
    archive_close_evt_writer: unsafe extern "C" fn(*mut RawArchive, *mut RawEvtWriter) -> ErrorCode,
    archive_open_def_files: unsafe extern "C" fn(*mut RawArchive) -> ErrorCode,
    archive_close_def_files: unsafe extern "C" fn(*mut RawArchive) -> ErrorCode,
    archive_get_def_writer: unsafe extern "C" fn(*mut RawArchive, u64) -> *mut RawDefWriter,
    archive_close_def_writer: unsafe extern "C" fn(*mut RawArchive, *mut RawDefWriter) -> ErrorCode,
    archive_get_global_def_writer: unsafe extern "C" fn(*mut RawArchive) -> *mut RawGlobalDefWriter,
    evt_enter:
        unsafe extern "C" fn(*mut RawEvtWriter, *mut RawAttributeList, u64, u32) -> ErrorCode,
    evt_leave:
        unsafe extern "C" fn(*mut RawEvtWriter, *mut RawAttributeList, u64, u32) -> ErrorCode,
    evt_measurement_on_off:
        unsafe extern "C" fn(*mut RawEvtWriter, *mut RawAttributeList, u64, u8) -> ErrorCode,
    evt_metric: unsafe extern "C" fn(
        *mut RawEvtWriter,
        *mut RawAttributeList,
        u64,
        u32,
        u8,
        *const u8,
        *const u64,
    ) -> ErrorCode,
    evt_get_number_of_events: unsafe extern "C" fn(*mut RawEvtWriter, *mut u64) -> ErrorCode,
    attribute_list_new: unsafe extern "C" fn() -> *mut RawAttributeList,
    attribute_list_delete: unsafe extern "C" fn(*mut RawAttributeList) -> ErrorCode,
    attribute_list_add_uint32: unsafe extern "C" fn(*mut RawAttributeList, u32, u32) -> ErrorCode,
    attribute_list_add_uint64: unsafe extern "C" fn(*mut RawAttributeList, u32, u64) -> ErrorCode,
    attribute_list_add_string_ref:
        unsafe extern "C" fn(*mut RawAttributeList, u32, u32) -> ErrorCode,
    def_string: unsafe extern "C" fn(*mut RawGlobalDefWriter, u32, *const c_char) -> ErrorCode,
    def_clock_properties:
        unsafe extern "C" fn(*mut RawGlobalDefWriter, u64, u64, u64, u64) -> ErrorCode,
    def_system_tree_node:
        unsafe extern "C" fn(*mut RawGlobalDefWriter, u32, u32, u32, u32) -> ErrorCode,
    def_location_group:
        unsafe extern "C" fn(*mut RawGlobalDefWriter, u32, u32, u8, u32, u32) -> ErrorCode,
    def_location:
        unsafe extern "C" fn(*mut RawGlobalDefWriter, u64, u32, u8, u64, u32) -> ErrorCode,
    def_region: unsafe extern "C" fn(
        *mut RawGlobalDefWriter,
        u32,
        u32,
        u32,
        u32,
        u8,
        u8,
        u32,
        u32,
        u32,
        u32,
    ) -> ErrorCode,
    def_attribute: unsafe extern "C" fn(*mut RawGlobalDefWriter, u32, u32, u32, u8) -> ErrorCode,
    def_metric_member: unsafe extern "C" fn(
        *mut RawGlobalDefWriter,
        u32,
        u32,
        u32,
        u8,
        u8,
        u8,
        u8,
        i64,
        u32,
    ) -> ErrorCode,
    def_metric_class:
        unsafe extern "C" fn(*mut RawGlobalDefWriter, u32, u8, *const u32, u8, u8) -> ErrorCode,
}

/// The loaded library. Its function pointers stay valid while `_lib` is loaded, which is as
/// long as this value lives (fields drop after `fns`, and nothing copies a pointer out).
pub(crate) struct Otf2 {
    fns: Fns,
    _lib: Library,
}

/// The library loaded once per process (see [`Otf2::shared`]).
static SHARED: Mutex<Option<Arc<Otf2>>> = Mutex::new(None);

impl Otf2 {
    /// The OTF2 library from [`LIBRARY_NAMES`], loaded on first use and then kept: loading it
    /// registers the process-wide error callback, and unloading it between exports gains nothing.
    /// A failed load is tried again next time (the library may have been installed since).
    pub fn shared() -> Result<Arc<Otf2>, ExportError> {
        let mut slot = SHARED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(lib) = slot.as_ref() {
            return Ok(Arc::clone(lib));
        }
        let lib = Arc::new(Otf2::load(&LIBRARY_NAMES)?);
        *slot = Some(Arc::clone(&lib));
        Ok(lib)
    }

    /// Loads the first of `names` that the dynamic loader finds.
    pub fn load(names: &[&'static str]) -> Result<Otf2, ExportError> {
        let mut last = None;
        for &name in names {
            // SAFETY: loading runs the library's initialisers; OTF2's only set up its own
            // state and have no preconditions.
            match unsafe { Library::new(name) } {
                Ok(lib) => return Otf2::bind(name, lib),
                Err(e) => last = Some(e),
            }
        }
        Err(ExportError::Otf2Missing {
            tried: names.join(", "),
            source: last,
        })
    }

    fn bind(name: &'static str, lib: Library) -> Result<Otf2, ExportError> {
        fn sym<T: Copy>(
            lib: &Library,
            library: &'static str,
            symbol: &'static str,
        ) -> Result<T, ExportError> {
            // SAFETY: every caller below asks for `symbol` with the type its `Fns` field has,
            // which is the OTF2 3.0 header's declaration of that function.
            unsafe { lib.get::<T>(symbol) }
                .map(|s| *s)
                .map_err(|source| ExportError::Otf2Symbol {
                    library,
                    symbol,
                    source,
                })
        }
        macro_rules! bind {
            ($($field:ident = $symbol:literal),* $(,)?) => {
                Fns { $($field: sym(&lib, name, $symbol)?),* }
            };
        }
        let fns = bind! {
            error_get_name = "OTF2_Error_GetName",
            error_get_description = "OTF2_Error_GetDescription",
            error_register_callback = "OTF2_Error_RegisterCallback",
            archive_open = "OTF2_Archive_Open",
            archive_close = "OTF2_Archive_Close",
            archive_set_flush_callbacks = "OTF2_Archive_SetFlushCallbacks",
            archive_set_serial_collective_callbacks = "OTF2_Archive_SetSerialCollectiveCallbacks",
            archive_set_creator = "OTF2_Archive_SetCreator",
            archive_set_description = "OTF2_Archive_SetDescription",
            archive_open_evt_files = "OTF2_Archive_OpenEvtFiles",
            archive_close_evt_files = "OTF2_Archive_CloseEvtFiles",
            archive_get_evt_writer = "OTF2_Archive_GetEvtWriter",
            archive_close_evt_writer = "OTF2_Archive_CloseEvtWriter",
            archive_open_def_files = "OTF2_Archive_OpenDefFiles",
            archive_close_def_files = "OTF2_Archive_CloseDefFiles",
            archive_get_def_writer = "OTF2_Archive_GetDefWriter",
            archive_close_def_writer = "OTF2_Archive_CloseDefWriter",
            archive_get_global_def_writer = "OTF2_Archive_GetGlobalDefWriter",
            evt_enter = "OTF2_EvtWriter_Enter",
            evt_leave = "OTF2_EvtWriter_Leave",
            evt_measurement_on_off = "OTF2_EvtWriter_MeasurementOnOff",
            evt_metric = "OTF2_EvtWriter_Metric",
            evt_get_number_of_events = "OTF2_EvtWriter_GetNumberOfEvents",
            attribute_list_new = "OTF2_AttributeList_New",
            attribute_list_delete = "OTF2_AttributeList_Delete",
            attribute_list_add_uint32 = "OTF2_AttributeList_AddUint32",
            attribute_list_add_uint64 = "OTF2_AttributeList_AddUint64",
            attribute_list_add_string_ref = "OTF2_AttributeList_AddStringRef",
            def_string = "OTF2_GlobalDefWriter_WriteString",
            def_clock_properties = "OTF2_GlobalDefWriter_WriteClockProperties",
            def_system_tree_node = "OTF2_GlobalDefWriter_WriteSystemTreeNode",
            def_location_group = "OTF2_GlobalDefWriter_WriteLocationGroup",
            def_location = "OTF2_GlobalDefWriter_WriteLocation",
            def_region = "OTF2_GlobalDefWriter_WriteRegion",
            def_attribute = "OTF2_GlobalDefWriter_WriteAttribute",
            def_metric_member = "OTF2_GlobalDefWriter_WriteMetricMember",
            def_metric_class = "OTF2_GlobalDefWriter_WriteMetricClass",
        };
        // SAFETY: `quiet` has the callback's signature (see `ErrorCallback`) and is a plain
        // function, valid for the life of the process; the user data is never read.
        unsafe { (fns.error_register_callback)(Some(quiet), std::ptr::null_mut()) };
        Ok(Otf2 { fns, _lib: lib })
    }

    /// `Ok` for `OTF2_SUCCESS`, else the error naming `call`, the code and the archive.
    fn check(&self, path: &Path, call: &'static str, code: ErrorCode) -> Result<(), ExportError> {
        if code == OTF2_SUCCESS {
            return Ok(());
        }
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: OTF2_Error_GetName/GetDescription return pointers to static,
                // NUL-terminated strings (or null, handled above).
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        // SAFETY: both functions take any code, known or not, and only read static tables.
        let (name, description) = unsafe {
            (
                text((self.fns.error_get_name)(code)),
                text((self.fns.error_get_description)(code)),
            )
        };
        Err(ExportError::Otf2 {
            path: path.to_path_buf(),
            call,
            code: name,
            description,
        })
    }

    /// An error for a call that returned a null handle (OTF2 says why only to its error
    /// callback, which this module silences).
    fn null(path: &Path, call: &'static str) -> ExportError {
        ExportError::Otf2 {
            path: path.to_path_buf(),
            call,
            code: "NULL".into(),
            description: "no handle returned".into(),
        }
    }
}

/// A C copy of `s`. OTF2 strings end at NUL, so an interior NUL (which no site or kernel name
/// should hold) is shown as U+FFFD rather than silently cutting the name short.
fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\u{FFFD}")).unwrap_or_default()
}

/// An archive being written: opened with the serial collective callbacks (one process writes
/// everything) and with its event files open. Closed by [`Archive::close`], or by dropping it
/// after an error.
pub(crate) struct Archive<'l> {
    lib: &'l Otf2,
    raw: NonNull<RawArchive>,
    /// The attribute list every event is written with (empty for most).
    attrs: NonNull<RawAttributeList>,
    path: PathBuf,
    /// Whether `close` released the handles already.
    closed: bool,
}

/// Sizes of OTF2's buffers, within the 256 KiB–16 MiB the library accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkSizes {
    pub events: u64,
    pub definitions: u64,
}

impl<'l> Archive<'l> {
    /// Creates the archive `path/NAME.otf2` (with `path/NAME.def` and `path/NAME/`); `path`
    /// must not hold one already.
    pub fn create(
        lib: &'l Otf2,
        path: &Path,
        name: &str,
        chunks: ChunkSizes,
        creator: &str,
        description: &str,
    ) -> Result<Archive<'l>, ExportError> {
        let c_path =
            CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| ExportError::Otf2 {
                path: path.to_path_buf(),
                call: "OTF2_Archive_Open",
                code: "path".into(),
                description: "the path holds a NUL byte".into(),
            })?;
        let c_name = c_string(name);
        // SAFETY: both strings are NUL-terminated and live across the call; the enum values
        // are the header's.
        let raw = unsafe {
            (lib.fns.archive_open)(
                c_path.as_ptr(),
                c_name.as_ptr(),
                FILEMODE_WRITE,
                chunks.events,
                chunks.definitions,
                SUBSTRATE_POSIX,
                COMPRESSION_NONE,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| Otf2::null(path, "OTF2_Archive_Open"))?;
        // SAFETY: takes no arguments; returns a new list or null.
        let attrs = unsafe { (lib.fns.attribute_list_new)() };
        let Some(attrs) = NonNull::new(attrs) else {
            // SAFETY: `raw` was just opened and is closed once, here.
            unsafe { (lib.fns.archive_close)(raw.as_ptr()) };
            return Err(Otf2::null(path, "OTF2_AttributeList_New"));
        };
        let archive = Archive {
            lib,
            raw,
            attrs,
            path: path.to_path_buf(),
            closed: false,
        };
        let creator = c_string(creator);
        let description = c_string(description);
        let a = archive.raw.as_ptr();
        // SAFETY: `a` is the open archive; FLUSH_CALLBACKS is a static, so it outlives the
        // archive however long OTF2 keeps the pointer; the strings live across their calls
        // (OTF2 copies them).
        unsafe {
            archive.ok(
                "OTF2_Archive_SetFlushCallbacks",
                (lib.fns.archive_set_flush_callbacks)(a, &FLUSH_CALLBACKS, std::ptr::null_mut()),
            )?;
            archive.ok(
                "OTF2_Archive_SetSerialCollectiveCallbacks",
                (lib.fns.archive_set_serial_collective_callbacks)(a),
            )?;
            archive.ok(
                "OTF2_Archive_SetCreator",
                (lib.fns.archive_set_creator)(a, creator.as_ptr()),
            )?;
            archive.ok(
                "OTF2_Archive_SetDescription",
                (lib.fns.archive_set_description)(a, description.as_ptr()),
            )?;
            archive.ok(
                "OTF2_Archive_OpenEvtFiles",
                (lib.fns.archive_open_evt_files)(a),
            )?;
        }
        Ok(archive)
    }

    fn ok(&self, call: &'static str, code: ErrorCode) -> Result<(), ExportError> {
        self.lib.check(&self.path, call, code)
    }

    /// The event writer of `location`. Borrowing the archive mutably makes it the only one open:
    /// OTF2 holds a buffer per open writer, and closing each before the next keeps memory to one.
    pub fn events(&mut self, location: u64) -> Result<EvtWriter<'_, 'l>, ExportError> {
        // SAFETY: the archive is open with its event files open (`create`).
        let raw = unsafe { (self.lib.fns.archive_get_evt_writer)(self.raw.as_ptr(), location) };
        let raw =
            NonNull::new(raw).ok_or_else(|| Otf2::null(&self.path, "OTF2_Archive_GetEvtWriter"))?;
        Ok(EvtWriter { archive: self, raw })
    }

    /// Closes the event files and writes each location's local definitions file, which
    /// readers open for every location even when, as here, it holds no definition.
    pub fn finish_locations(
        &mut self,
        locations: impl IntoIterator<Item = u64>,
    ) -> Result<(), ExportError> {
        let a = self.raw.as_ptr();
        // SAFETY: the archive is open; event writers were closed as they finished (each
        // `EvtWriter` borrowed the archive until it was closed or dropped).
        unsafe {
            self.ok(
                "OTF2_Archive_CloseEvtFiles",
                (self.lib.fns.archive_close_evt_files)(a),
            )?;
            self.ok(
                "OTF2_Archive_OpenDefFiles",
                (self.lib.fns.archive_open_def_files)(a),
            )?;
        }
        for location in locations {
            // SAFETY: the definition files are open; the writer is closed right away.
            unsafe {
                let w = (self.lib.fns.archive_get_def_writer)(a, location);
                if w.is_null() {
                    return Err(Otf2::null(&self.path, "OTF2_Archive_GetDefWriter"));
                }
                self.ok(
                    "OTF2_Archive_CloseDefWriter",
                    (self.lib.fns.archive_close_def_writer)(a, w),
                )?;
            }
        }
        // SAFETY: the definition files were opened above.
        unsafe {
            self.ok(
                "OTF2_Archive_CloseDefFiles",
                (self.lib.fns.archive_close_def_files)(a),
            )
        }
    }

    /// The global definitions writer (the archive closes it).
    pub fn global_defs(&mut self) -> Result<GlobalDefs<'_, 'l>, ExportError> {
        // SAFETY: the archive is open and serial, so this process is its primary writer.
        let raw = unsafe { (self.lib.fns.archive_get_global_def_writer)(self.raw.as_ptr()) };
        let raw = NonNull::new(raw)
            .ok_or_else(|| Otf2::null(&self.path, "OTF2_Archive_GetGlobalDefWriter"))?;
        Ok(GlobalDefs { archive: self, raw })
    }

    /// Releases the attribute list and closes the archive (which writes the anchor file and the
    /// global definitions); the codes of both calls.
    fn release(&mut self) -> (ErrorCode, ErrorCode) {
        self.closed = true;
        // SAFETY: both handles are open: `closed` was false, and this is the one place that
        // releases them.
        unsafe {
            (
                (self.lib.fns.attribute_list_delete)(self.attrs.as_ptr()),
                (self.lib.fns.archive_close)(self.raw.as_ptr()),
            )
        }
    }

    /// Writes the anchor file and the global definitions, and releases everything.
    pub fn close(mut self) -> Result<(), ExportError> {
        let (deleted, closed) = self.release();
        self.ok("OTF2_Archive_Close", closed)?;
        self.ok("OTF2_AttributeList_Delete", deleted)
    }
}

impl Drop for Archive<'_> {
    /// After an error: releases the handles; the caller removes the half-written folder.
    fn drop(&mut self) {
        if !self.closed {
            self.release();
        }
    }
}

/// One location's event writer; the events are written in the order of the calls.
pub(crate) struct EvtWriter<'a, 'l> {
    archive: &'a mut Archive<'l>,
    raw: NonNull<RawEvtWriter>,
}

/// A value of an attribute attached to the next event.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AttrValue {
    U32(u32),
    U64(u64),
    /// A string definition's reference.
    Str(u32),
}

impl EvtWriter<'_, '_> {
    fn fns(&self) -> &Fns {
        &self.archive.lib.fns
    }

    /// Attaches `value` of attribute `attr` to the next event written (OTF2 empties the list
    /// when it writes an event).
    pub fn attr(&mut self, attr: u32, value: AttrValue) -> Result<(), ExportError> {
        let list = self.archive.attrs.as_ptr();
        // SAFETY: `list` is the archive's open attribute list.
        let (call, code) = unsafe {
            match value {
                AttrValue::U32(v) => (
                    "OTF2_AttributeList_AddUint32",
                    (self.fns().attribute_list_add_uint32)(list, attr, v),
                ),
                AttrValue::U64(v) => (
                    "OTF2_AttributeList_AddUint64",
                    (self.fns().attribute_list_add_uint64)(list, attr, v),
                ),
                AttrValue::Str(v) => (
                    "OTF2_AttributeList_AddStringRef",
                    (self.fns().attribute_list_add_string_ref)(list, attr, v),
                ),
            }
        };
        self.archive.ok(call, code)
    }

    pub fn enter(&mut self, time: u64, region: u32) -> Result<(), ExportError> {
        // SAFETY: the writer is open until `close` or drop; the attribute list is the
        // archive's (empty unless `attr` filled it).
        let code = unsafe {
            (self.fns().evt_enter)(self.raw.as_ptr(), self.archive.attrs.as_ptr(), time, region)
        };
        self.archive.ok("OTF2_EvtWriter_Enter", code)
    }

    pub fn leave(&mut self, time: u64, region: u32) -> Result<(), ExportError> {
        // SAFETY: as in `enter`.
        let code = unsafe {
            (self.fns().evt_leave)(self.raw.as_ptr(), self.archive.attrs.as_ptr(), time, region)
        };
        self.archive.ok("OTF2_EvtWriter_Leave", code)
    }

    /// A MeasurementOnOff event: `on` false where recording stopped, true where it resumed.
    pub fn measurement(&mut self, time: u64, on: bool) -> Result<(), ExportError> {
        let mode = if on { MEASUREMENT_ON } else { MEASUREMENT_OFF };
        // SAFETY: as in `enter`.
        let code = unsafe {
            (self.fns().evt_measurement_on_off)(
                self.raw.as_ptr(),
                self.archive.attrs.as_ptr(),
                time,
                mode,
            )
        };
        self.archive.ok("OTF2_EvtWriter_MeasurementOnOff", code)
    }

    /// A Metric event of a one-member metric class whose member is a u64.
    pub fn metric_u64(&mut self, time: u64, metric: u32, value: u64) -> Result<(), ExportError> {
        let types = [TYPE_UINT64];
        // `OTF2_MetricValue` is a union of i64, u64 and f64: a u64 has its layout.
        let values = [value];
        // SAFETY: as in `enter`; both arrays hold the one member the count says, and live
        // across the call.
        let code = unsafe {
            (self.fns().evt_metric)(
                self.raw.as_ptr(),
                self.archive.attrs.as_ptr(),
                time,
                metric,
                1,
                types.as_ptr(),
                values.as_ptr(),
            )
        };
        self.archive.ok("OTF2_EvtWriter_Metric", code)
    }

    /// Events written so far.
    pub fn event_count(&self) -> Result<u64, ExportError> {
        let mut n = 0u64;
        // SAFETY: as in `enter`; `n` is a valid place for the count.
        let code = unsafe { (self.fns().evt_get_number_of_events)(self.raw.as_ptr(), &mut n) };
        self.archive.ok("OTF2_EvtWriter_GetNumberOfEvents", code)?;
        Ok(n)
    }

    /// Flushes the location's events to its file and releases its buffer.
    pub fn close(self) -> Result<(), ExportError> {
        // Drop would close the writer a second time.
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the writer is open, and closed once: `this` is never dropped.
        let code = unsafe {
            (this.fns().archive_close_evt_writer)(this.archive.raw.as_ptr(), this.raw.as_ptr())
        };
        this.archive.ok("OTF2_Archive_CloseEvtWriter", code)
    }
}

impl Drop for EvtWriter<'_, '_> {
    /// After an error: closes the writer (`close` reports its result instead).
    fn drop(&mut self) {
        // SAFETY: the writer is open (`close` does not drop it); closed once.
        unsafe {
            (self.fns().archive_close_evt_writer)(self.archive.raw.as_ptr(), self.raw.as_ptr())
        };
    }
}

/// The global definitions writer. References are the caller's: it numbers strings, regions and
/// the rest, and defines each before it is referenced.
pub(crate) struct GlobalDefs<'a, 'l> {
    archive: &'a mut Archive<'l>,
    raw: NonNull<RawGlobalDefWriter>,
}

impl GlobalDefs<'_, '_> {
    fn ok(&self, call: &'static str, code: ErrorCode) -> Result<(), ExportError> {
        self.archive.ok(call, code)
    }

    fn fns(&self) -> &Fns {
        &self.archive.lib.fns
    }

    pub fn string(&mut self, id: u32, s: &str) -> Result<(), ExportError> {
        let c = c_string(s);
        // SAFETY: the writer is open (the archive is) and `c` lives across the call.
        let code = unsafe { (self.fns().def_string)(self.raw.as_ptr(), id, c.as_ptr()) };
        self.ok("OTF2_GlobalDefWriter_WriteString", code)
    }

    /// Ticks per second, the first tick, and the ticks from there to the last event.
    pub fn clock(&mut self, resolution: u64, offset: u64, length: u64) -> Result<(), ExportError> {
        // SAFETY: the writer is open; plain values.
        let code = unsafe {
            (self.fns().def_clock_properties)(
                self.raw.as_ptr(),
                resolution,
                offset,
                length,
                UNDEFINED_TIMESTAMP,
            )
        };
        self.ok("OTF2_GlobalDefWriter_WriteClockProperties", code)
    }

    pub fn system_tree_node(
        &mut self,
        id: u32,
        name: u32,
        class: u32,
        parent: Option<u32>,
    ) -> Result<(), ExportError> {
        // SAFETY: the writer is open; plain values.
        let code = unsafe {
            (self.fns().def_system_tree_node)(
                self.raw.as_ptr(),
                id,
                name,
                class,
                parent.unwrap_or(UNDEFINED_REF),
            )
        };
        self.ok("OTF2_GlobalDefWriter_WriteSystemTreeNode", code)
    }

    pub fn location_group(
        &mut self,
        id: u32,
        name: u32,
        kind: GroupType,
        node: u32,
        creator: Option<u32>,
    ) -> Result<(), ExportError> {
        // SAFETY: the writer is open; plain values.
        let code = unsafe {
            (self.fns().def_location_group)(
                self.raw.as_ptr(),
                id,
                name,
                kind as u8,
                node,
                creator.unwrap_or(UNDEFINED_REF),
            )
        };
        self.ok("OTF2_GlobalDefWriter_WriteLocationGroup", code)
    }

    pub fn location(
        &mut self,
        id: u64,
        name: u32,
        kind: LocationType,
        events: u64,
        group: u32,
    ) -> Result<(), ExportError> {
        // SAFETY: the writer is open; plain values.
        let code = unsafe {
            (self.fns().def_location)(self.raw.as_ptr(), id, name, kind as u8, events, group)
        };
        self.ok("OTF2_GlobalDefWriter_WriteLocation", code)
    }

    /// A CUDA region with no source file: `name` is also its canonical name.
    pub fn region(
        &mut self,
        id: u32,
        name: u32,
        description: u32,
        role: RegionRole,
    ) -> Result<(), ExportError> {
        // SAFETY: the writer is open; plain values.
        let code = unsafe {
            (self.fns().def_region)(
                self.raw.as_ptr(),
                id,
                name,
                name,
                description,
                role as u8,
                PARADIGM_CUDA,
                REGION_FLAG_NONE,
                UNDEFINED_REF,
                0,
                0,
            )
        };
        self.ok("OTF2_GlobalDefWriter_WriteRegion", code)
    }

    /// `kind` is one of the `TYPE_*` constants.
    pub fn attribute(
        &mut self,
        id: u32,
        name: u32,
        description: u32,
        kind: u8,
    ) -> Result<(), ExportError> {
        // SAFETY: the writer is open; plain values.
        let code =
            unsafe { (self.fns().def_attribute)(self.raw.as_ptr(), id, name, description, kind) };
        self.ok("OTF2_GlobalDefWriter_WriteAttribute", code)
    }

    /// A metric class `class` with one u64 member `member`, each value valid at its own time,
    /// recorded by accelerator locations at some region leaves.
    pub fn metric_u64(
        &mut self,
        member: u32,
        class: u32,
        name: u32,
        description: u32,
        unit: u32,
    ) -> Result<(), ExportError> {
        let members = [member];
        // SAFETY: the writer is open; `members` holds the one member the count says and
        // lives across the call.
        unsafe {
            self.ok(
                "OTF2_GlobalDefWriter_WriteMetricMember",
                (self.fns().def_metric_member)(
                    self.raw.as_ptr(),
                    member,
                    name,
                    description,
                    METRIC_TYPE_OTHER,
                    METRIC_ABSOLUTE_POINT,
                    TYPE_UINT64,
                    BASE_DECIMAL,
                    0,
                    unit,
                ),
            )?;
            self.ok(
                "OTF2_GlobalDefWriter_WriteMetricClass",
                (self.fns().def_metric_class)(
                    self.raw.as_ptr(),
                    class,
                    1,
                    members.as_ptr(),
                    METRIC_SYNCHRONOUS,
                    RECORDER_KIND_GPU,
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_one_line_naming_the_package() {
        let e = Otf2::load(&["libwarpscope-no-such-otf2.so.10"])
            .err()
            .expect("no such library");
        assert!(matches!(e, ExportError::Otf2Missing { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("libopen-trace-format2-10") && text.contains("libwarpscope-no-such-otf2"),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_library_that_is_not_otf2_is_named_with_the_missing_function() {
        let e = Otf2::load(&["libc.so.6"]).err().expect("libc is not OTF2");
        let text = e.to_string();
        assert!(
            matches!(e, ExportError::Otf2Symbol { .. }) && text.contains("OTF2_Error_GetName"),
            "{text}"
        );
    }
}
