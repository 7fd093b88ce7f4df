//! The library `warpscope run` preloads into a CUDA program (`LD_PRELOAD`): it sees the program's
//! modules, functions and launches at the driver's entry points and hands them to
//! [`profile::Interceptor`], which decides every launch; this file keeps only the C side.
//!
//! How it reaches every launch, whichever way the program was built:
//! - a program linked against `libcuda` (the driver API) calls the `cu*` symbols this library
//!   exports, which come before libcuda's in the symbol search of a preloaded library;
//! - the CUDA runtime, linked statically (nvcc's default) or as `libcudart.so`, `dlopen`s
//!   `libcuda.so.1` and takes `cuGetProcAddress_v2` with `dlsym`, then every entry point through
//!   it (per-thread-stream `_ptsz` variants and `cuLaunchKernelEx` included). Interposing the
//!   `cu*` symbols alone never sees those, so this library exports `dlsym` too: a symbol looked up
//!   in libcuda that the interceptor watches comes back as this library's hook, and
//!   `cuGetProcAddress` hands out hooks in the same way;
//! - lazy loading (`cuLibrary*`, `CUkernel`, CUDA 12 and 13) and modules are both followed; a
//!   `CUkernel` launched as a `CUfunction` is the same kernel to the interceptor.
//!
//! Every hook calls the driver's own function in the end, unless the interceptor ran the probed
//! kernel in its place. A panic never crosses into the program: it is caught, and the launch goes
//! to the driver as the program made it. Launch attributes (`cuLaunchKernelEx` with clusters,
//! cooperative launch, …) are launched as they are and recorded as not profiled.
//!
//! One of the workspace's files with unsafe code: the driver API is a C FFI, and the hooks read
//! the program's arguments through raw pointers. Each block says why it is sound.
#![allow(unsafe_code)]

mod real;

use profile::{Action, Handle, Image, Interceptor, LaunchShape, ParamLayout, ProfileError};
use real::{CUDA_SUCCESS, CUresult, Real, Slot};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, OnceLock};

/// The interceptor and where its records go, or why there is none (then every call passes).
struct State {
    icpt: Interceptor,
    launches: std::fs::File,
}

static STATE: OnceLock<Option<Mutex<State>>> = OnceLock::new();

/// The interceptor, set up from the run's configuration on first use. A program started without
/// `warpscope run`'s configuration, or with one that does not read, runs untouched (and says so
/// once on stderr).
fn state() -> Option<&'static Mutex<State>> {
    STATE
        .get_or_init(|| match catch_unwind(setup) {
            Ok(Ok(s)) => Some(Mutex::new(s)),
            Ok(Err(why)) => {
                let _ = writeln!(std::io::stderr(), "warpscope: not profiling: {why}");
                None
            }
            Err(_) => None,
        })
        .as_ref()
}

fn setup() -> Result<State, String> {
    let path = std::env::var_os(profile::CONFIG_ENV)
        .ok_or_else(|| format!("{} is not set", profile::CONFIG_ENV))?;
    let cfg = profile::RunConfig::read(std::path::Path::new(&path)).map_err(|e| e.to_string())?;
    let resolved = cfg.resolve().map_err(|e| e.to_string())?;
    let launches = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(cfg.out.join(trace::LAUNCHES_FILE))
        .map_err(|e| format!("{}: {e}", cfg.out.display()))?;
    let program = std::env::args().collect::<Vec<_>>().join(" ");
    // SAFETY: `write_counts` is a plain `extern "C" fn()` that touches only this library's
    // statics; atexit keeps the pointer for the life of the process, as this library stays
    // loaded (a preloaded object is never unloaded).
    unsafe { libc::atexit(write_counts) };
    Ok(State {
        icpt: Interceptor::new(resolved, program),
        launches,
    })
}

/// Runs `f` on the interceptor, if there is one, catching any panic (`None` then).
fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> Option<T> {
    let m = state()?;
    catch_unwind(AssertUnwindSafe(|| {
        let mut s = m.lock().ok()?;
        let out = f(&mut s);
        let records = s.icpt.take_records();
        for r in records {
            if let Ok(line) = serde_json::to_string(&r) {
                let _ = writeln!(s.launches, "{line}");
            }
        }
        Some(out)
    }))
    .ok()
    .flatten()
}

/// At exit: each kernel's launch count, beside the launch records.
extern "C" fn write_counts() {
    let _ = catch_unwind(|| {
        let Some(m) = STATE.get().and_then(Option::as_ref) else {
            return;
        };
        // try_lock: a program that exits while another of its threads is inside a hook must not
        // hang at exit; its counts are then left out, and the index says so.
        let Ok(s) = m.try_lock() else { return };
        let counts = trace::LaunchCounts {
            kernels: s
                .icpt
                .launch_counts()
                .iter()
                .map(|(k, n)| (k.clone(), *n))
                .collect(),
        };
        let _ = counts.write(&s.icpt.out().join(trace::COUNTS_FILE));
    });
}

// ---------------------------------------------------------------- images and functions

/// Reads the image a module or library was loaded from: PTX text, a fatbin (or cudart's wrapper
/// around one), or a cubin.
///
/// # Safety
/// `image` points at an image the driver accepted: a NUL-terminated PTX text, an ELF cubin, or a
/// fatbin whose header states its length.
unsafe fn read_image(image: *const c_void) -> Image {
    if image.is_null() {
        return Image::NoPtx("a module without an image".into());
    }
    // SAFETY: every accepted image is at least 16 bytes long (a fatbin header, an ELF header, or
    // PTX text, which is far longer).
    let head = unsafe { std::slice::from_raw_parts(image as *const u8, 16) };
    let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if magic == fatbin::WRAPPER_MAGIC {
        // SAFETY: cudart's wrapper {int magic; int version; const u64* data; void* filename}
        // holds the fatbin's address at offset 8.
        let data = unsafe { *(image as *const *const c_void).add(1) };
        return unsafe { read_image(data) };
    }
    if magic == fatbin::FATBIN_MAGIC {
        return match fatbin::image_len(head) {
            // SAFETY: the header states the image's length, and the driver accepted the image.
            Ok(len) => Image::Fatbin(unsafe {
                std::slice::from_raw_parts(image as *const u8, len).to_vec()
            }),
            Err(e) => Image::NoPtx(format!("a fatbin whose header does not read: {e}")),
        };
    }
    if head.starts_with(b"\x7fELF") {
        return Image::NoPtx(
            "loaded as a cubin (SASS only): rebuild with PTX embedded to profile it".into(),
        );
    }
    // SAFETY: anything else the driver accepts is PTX text, NUL-terminated.
    let text = unsafe { CStr::from_ptr(image as *const c_char) };
    Image::Ptx(text.to_string_lossy().into_owned())
}

fn loaded(result: CUresult, handle: *mut *mut c_void, image: *const c_void) -> CUresult {
    if result == CUDA_SUCCESS && !handle.is_null() {
        // SAFETY: on success the driver wrote the new handle; the image is the one it accepted.
        let h = unsafe { *handle } as Handle;
        if let Ok(img) = catch_unwind(|| unsafe { read_image(image) }) {
            with_state(|s| s.icpt.loaded(h, img));
        }
    }
    result
}

fn got(
    result: CUresult,
    out: *mut *mut c_void,
    owner: *mut c_void,
    name: *const c_char,
) -> CUresult {
    if result == CUDA_SUCCESS && !out.is_null() && !name.is_null() {
        // SAFETY: on success the driver wrote the handle; `name` is the C string it looked up.
        let (h, name) = unsafe { (*out as Handle, CStr::from_ptr(name).to_string_lossy()) };
        with_state(|s| s.icpt.function(h, owner as Handle, &name));
    }
    result
}

// ---------------------------------------------------------------- launches

/// The parameters behind `params` (one pointer per parameter) or `extra`
/// (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE` pairs ending in `CU_LAUNCH_PARAM_END`).
///
/// # Safety
/// `params` and `extra` are what the program passed to a launch the driver would accept for a
/// kernel of `layout`'s signature.
unsafe fn read_params(
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    layout: &ParamLayout,
) -> Result<Vec<Vec<u8>>, ProfileError> {
    if !params.is_null() {
        return Ok((layout.params.iter().enumerate())
            .map(|(i, &(size, _))| {
                // SAFETY: the driver reads `size` bytes behind the i-th pointer for this launch.
                unsafe {
                    std::slice::from_raw_parts(*params.add(i) as *const u8, size as usize).to_vec()
                }
            })
            .collect());
    }
    let (mut buf, mut len) = (std::ptr::null::<u8>(), None::<usize>);
    let mut at = extra;
    // SAFETY: `extra` is a list of key/value pointers ended by CU_LAUNCH_PARAM_END (0), as the
    // driver requires; the size's value points at a size_t.
    unsafe {
        while !at.is_null() && !(*at).is_null() {
            match *at as usize {
                real::CU_LAUNCH_PARAM_BUFFER_POINTER => buf = *at.add(1) as *const u8,
                real::CU_LAUNCH_PARAM_BUFFER_SIZE => len = Some(*(*at.add(1) as *const usize)),
                _ => {}
            }
            at = at.add(2);
        }
    }
    match (buf.is_null(), len) {
        (false, Some(len)) => {
            // SAFETY: the driver reads `len` bytes of the parameter buffer for this launch.
            layout.split_buffer(unsafe { std::slice::from_raw_parts(buf, len) })
        }
        _ => Err(ProfileError::Params(
            "a launch with neither kernelParams nor a parameter buffer".into(),
        )),
    }
}

/// A `cuLaunchKernel` (or `_ptsz`) the program made, through the interceptor.
#[allow(clippy::too_many_arguments)]
fn launch(
    real: real::LaunchKernel,
    ptsz: bool,
    f: *mut c_void,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let shape = LaunchShape {
        grid,
        block,
        shared_bytes: shared,
        stream: real::stream_handle(stream, ptsz),
    };
    let call = || {
        // SAFETY: the program's own launch, passed on as it made it.
        unsafe {
            real(
                f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream, params,
                extra,
            )
        }
    };
    let action = with_state(|s| {
        let mut drv = Real::driver();
        s.icpt.launch(&mut drv, f as Handle, &shape, &mut |layout| {
            // SAFETY: the program's arguments of this launch, for this kernel's signature.
            unsafe { read_params(params, extra, layout) }
        })
    });
    match action {
        Some(Action::Replaced) => CUDA_SUCCESS,
        Some(Action::Original { time: true }) => match Real::driver().timed(shape.stream, call) {
            (result, Some(ms)) => {
                with_state(|s| s.icpt.timed(f as Handle, &shape, ms));
                result
            }
            (result, None) => result,
        },
        Some(Action::Original { time: false }) | None => call(),
    }
}

/// A `cuLaunchKernelEx` (or `_ptsz`): its configuration read, and launched through
/// [`launch`] when it has no launch attributes.
fn launch_ex(
    real_ex: real::LaunchKernelEx,
    ptsz: bool,
    config: *const real::CUlaunchConfig,
    f: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the program's own launch, passed on as it made it.
    let call = || unsafe { real_ex(config, f, params, extra) };
    if config.is_null() {
        return call();
    }
    // SAFETY: a configuration the program passed to the driver.
    let c = unsafe { &*config };
    let shape = LaunchShape {
        grid: [c.grid_dim_x, c.grid_dim_y, c.grid_dim_z],
        block: [c.block_dim_x, c.block_dim_y, c.block_dim_z],
        shared_bytes: c.shared_mem_bytes,
        stream: real::stream_handle(c.h_stream, ptsz),
    };
    if c.num_attrs > 0 {
        with_state(|s| {
            s.icpt.refused(
                f as Handle,
                &shape,
                "launched with launch attributes (cuLaunchKernelEx): not profiled",
            )
        });
        return call();
    }
    match Real::launch_kernel(ptsz) {
        Some(plain) => launch(
            plain,
            ptsz,
            f,
            shape.grid,
            shape.block,
            shape.shared_bytes,
            c.h_stream,
            params,
            extra,
        ),
        None => call(),
    }
}

// ---------------------------------------------------------------- the hooks

/// The hooks: each watched entry point, once per slot (the driver's plain and per-thread-stream
/// variants of one symbol are two slots), calling the driver's function recorded for its slot.
macro_rules! hooks {
    ($($slot:expr => $load_data:ident, $load_data_ex:ident, $load_fatbin:ident, $get_function:ident,
       $library_load:ident, $library_kernel:ident, $kernel_function:ident, $func_attr:ident,
       $kernel_attr:ident, $launch:ident, $launch_ex:ident;)*) => {$(
        unsafe extern "C" fn $load_data(m: *mut *mut c_void, image: *const c_void) -> CUresult {
            let Some(real) = Slot::ModuleLoadData.get::<real::ModuleLoadData>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            loaded(unsafe { real(m, image) }, m, image)
        }
        unsafe extern "C" fn $load_data_ex(
            m: *mut *mut c_void, image: *const c_void, n: c_uint, o: *mut c_int, v: *mut *mut c_void,
        ) -> CUresult {
            let Some(real) = Slot::ModuleLoadDataEx.get::<real::ModuleLoadDataEx>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            loaded(unsafe { real(m, image, n, o, v) }, m, image)
        }
        unsafe extern "C" fn $load_fatbin(m: *mut *mut c_void, image: *const c_void) -> CUresult {
            let Some(real) = Slot::ModuleLoadFatBinary.get::<real::ModuleLoadData>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            loaded(unsafe { real(m, image) }, m, image)
        }
        unsafe extern "C" fn $get_function(
            f: *mut *mut c_void, m: *mut c_void, name: *const c_char,
        ) -> CUresult {
            let Some(real) = Slot::ModuleGetFunction.get::<real::GetFunction>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            got(unsafe { real(f, m, name) }, f, m, name)
        }
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $library_load(
            l: *mut *mut c_void, code: *const c_void, jo: *mut c_int, jv: *mut *mut c_void,
            jn: c_uint, lo: *mut c_int, lv: *mut *mut c_void, ln: c_uint,
        ) -> CUresult {
            let Some(real) = Slot::LibraryLoadData.get::<real::LibraryLoadData>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            loaded(unsafe { real(l, code, jo, jv, jn, lo, lv, ln) }, l, code)
        }
        unsafe extern "C" fn $library_kernel(
            k: *mut *mut c_void, l: *mut c_void, name: *const c_char,
        ) -> CUresult {
            let Some(real) = Slot::LibraryGetKernel.get::<real::GetFunction>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            got(unsafe { real(k, l, name) }, k, l, name)
        }
        unsafe extern "C" fn $kernel_function(f: *mut *mut c_void, k: *mut c_void) -> CUresult {
            let Some(real) = Slot::KernelGetFunction.get::<real::KernelGetFunction>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            let result = unsafe { real(f, k) };
            if result == CUDA_SUCCESS && !f.is_null() {
                // SAFETY: on success the driver wrote the function handle.
                let function = unsafe { *f } as Handle;
                with_state(|s| s.icpt.alias(function, k as Handle));
            }
            result
        }
        unsafe extern "C" fn $func_attr(f: *mut c_void, attr: c_int, value: c_int) -> CUresult {
            let Some(real) = Slot::FuncSetAttribute.get::<real::FuncSetAttribute>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            let result = unsafe { real(f, attr, value) };
            if result == CUDA_SUCCESS {
                with_state(|s| s.icpt.attribute(f as Handle, attr, value));
            }
            result
        }
        unsafe extern "C" fn $kernel_attr(
            attr: c_int, value: c_int, k: *mut c_void, dev: c_int,
        ) -> CUresult {
            let Some(real) = Slot::KernelSetAttribute.get::<real::KernelSetAttribute>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            // SAFETY: the program's call, passed on.
            let result = unsafe { real(attr, value, k, dev) };
            if result == CUDA_SUCCESS {
                with_state(|s| s.icpt.attribute(k as Handle, attr, value));
            }
            result
        }
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $launch(
            f: *mut c_void, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint,
            bz: c_uint, shared: c_uint, stream: *mut c_void, params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> CUresult {
            let Some(real) = Slot::LaunchKernel.get::<real::LaunchKernel>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            let ptsz = Slot::LaunchKernel.is_ptsz($slot);
            launch(real, ptsz, f, [gx, gy, gz], [bx, by, bz], shared, stream, params, extra)
        }
        unsafe extern "C" fn $launch_ex(
            config: *const real::CUlaunchConfig, f: *mut c_void, params: *mut *mut c_void,
            extra: *mut *mut c_void,
        ) -> CUresult {
            let Some(real) = Slot::LaunchKernelEx.get::<real::LaunchKernelEx>($slot) else {
                return real::CUDA_ERROR_NOT_FOUND;
            };
            let ptsz = Slot::LaunchKernelEx.is_ptsz($slot);
            launch_ex(real, ptsz, config, f, params, extra)
        }
    )*};
}

hooks! {
    0 => load_data_0, load_data_ex_0, load_fatbin_0, get_function_0, library_load_0,
        library_kernel_0, kernel_function_0, func_attr_0, kernel_attr_0, launch_0, launch_ex_0;
    1 => load_data_1, load_data_ex_1, load_fatbin_1, get_function_1, library_load_1,
        library_kernel_1, kernel_function_1, func_attr_1, kernel_attr_1, launch_1, launch_ex_1;
}

/// The hook of `slot` for each watched symbol (base names, as `cuGetProcAddress` takes them).
fn hook_for(watched: Slot, slot: usize) -> *mut c_void {
    let hooks: [[*mut c_void; 2]; Slot::COUNT] = [
        [load_data_0 as _, load_data_1 as _],
        [load_data_ex_0 as _, load_data_ex_1 as _],
        [load_fatbin_0 as _, load_fatbin_1 as _],
        [get_function_0 as _, get_function_1 as _],
        [library_load_0 as _, library_load_1 as _],
        [library_kernel_0 as _, library_kernel_1 as _],
        [kernel_function_0 as _, kernel_function_1 as _],
        [func_attr_0 as _, func_attr_1 as _],
        [kernel_attr_0 as _, kernel_attr_1 as _],
        [launch_0 as _, launch_1 as _],
        [launch_ex_0 as _, launch_ex_1 as _],
    ];
    hooks[watched as usize][slot]
}

/// Puts the hook in place of a driver function the program asked for: records `found` (the
/// driver's) in a slot of `symbol`'s and returns that slot's hook; anything not watched, or not
/// found, comes back as it was.
fn hooked(symbol: &str, found: *mut c_void) -> *mut c_void {
    if found.is_null() {
        return found;
    }
    match Slot::of(symbol).and_then(|w| w.take(found).map(|slot| (w, slot))) {
        Some((watched, slot)) => hook_for(watched, slot),
        None => found,
    }
}

// ---------------------------------------------------------------- exported symbols

/// `dlsym`: the CUDA runtime's way to `cuGetProcAddress_v2` (and a program's way to any entry
/// point it looks up in libcuda itself).
///
/// # Safety
/// As glibc's `dlsym`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    // SAFETY: the real dlsym, with the caller's arguments.
    let found = unsafe { real::dlsym(handle, symbol) };
    if symbol.is_null() || found.is_null() {
        return found;
    }
    // SAFETY: a symbol name the caller passed to dlsym is a C string.
    let name = unsafe { CStr::from_ptr(symbol) }.to_string_lossy();
    if !(name.starts_with("cu") && real::in_libcuda(found)) {
        return found;
    }
    match name.as_ref() {
        "cuGetProcAddress" => cuGetProcAddress as *mut c_void,
        "cuGetProcAddress_v2" => real::remember_get_proc_address(found),
        other => {
            let base = other.strip_suffix("_ptsz").unwrap_or(other);
            catch_unwind(|| hooked(base, found)).unwrap_or(found)
        }
    }
}

/// `cuGetProcAddress_v2`: the driver's entry point, with watched symbols handed out as hooks.
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> CUresult {
    let Some(real) = real::get_proc_address() else {
        return real::CUDA_ERROR_NOT_FOUND;
    };
    // SAFETY: the caller's arguments, passed on.
    let result = unsafe { real(symbol, pfn, version, flags, status) };
    if result == CUDA_SUCCESS && !symbol.is_null() && !pfn.is_null() {
        // SAFETY: a C string the caller passed; on success the driver wrote `*pfn`.
        let name = unsafe { CStr::from_ptr(symbol) }.to_string_lossy();
        unsafe {
            *pfn = match name.as_ref() {
                // The signature gained its status argument in CUDA 12.0.
                "cuGetProcAddress" if version >= 12000 => cuGetProcAddress_v2 as *mut c_void,
                "cuGetProcAddress" => cuGetProcAddress as *mut c_void,
                other => catch_unwind(|| hooked(other, *pfn)).unwrap_or(*pfn),
            };
        }
    }
    result
}

/// `cuGetProcAddress` as programs built before CUDA 12 call it (without the status argument).
///
/// # Safety
/// As the driver's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
) -> CUresult {
    // SAFETY: the same call with no status to write.
    unsafe { cuGetProcAddress_v2(symbol, pfn, version, flags, std::ptr::null_mut()) }
}

/// The watched entry points a program linked against libcuda calls by name.
macro_rules! exported {
    ($($name:ident($($arg:ident: $ty:ty),*) => $slot:ident, $symbol:literal;)*) => {$(
        /// The driver's entry point of the same name, watched.
        ///
        /// # Safety
        /// As the driver's.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> CUresult {
            let found = real::libcuda_symbol($symbol);
            if found.is_null() {
                return real::CUDA_ERROR_NOT_FOUND;
            }
            let hook = hooked(Slot::$slot.base(), found);
            // SAFETY: the hook of this symbol's slot has this symbol's signature.
            let hook: unsafe extern "C" fn($($ty),*) -> CUresult =
                unsafe { std::mem::transmute::<*mut c_void, _>(hook) };
            unsafe { hook($($arg),*) }
        }
    )*};
}

exported! {
    cuModuleLoadData(m: *mut *mut c_void, image: *const c_void) => ModuleLoadData, c"cuModuleLoadData";
    cuModuleLoadDataEx(m: *mut *mut c_void, image: *const c_void, n: c_uint, o: *mut c_int, v: *mut *mut c_void)
        => ModuleLoadDataEx, c"cuModuleLoadDataEx";
    cuModuleLoadFatBinary(m: *mut *mut c_void, image: *const c_void) => ModuleLoadFatBinary, c"cuModuleLoadFatBinary";
    cuModuleGetFunction(f: *mut *mut c_void, m: *mut c_void, name: *const c_char) => ModuleGetFunction, c"cuModuleGetFunction";
    cuLibraryLoadData(l: *mut *mut c_void, code: *const c_void, jo: *mut c_int, jv: *mut *mut c_void, jn: c_uint,
        lo: *mut c_int, lv: *mut *mut c_void, ln: c_uint) => LibraryLoadData, c"cuLibraryLoadData";
    cuLibraryGetKernel(k: *mut *mut c_void, l: *mut c_void, name: *const c_char) => LibraryGetKernel, c"cuLibraryGetKernel";
    cuKernelGetFunction(f: *mut *mut c_void, k: *mut c_void) => KernelGetFunction, c"cuKernelGetFunction";
    cuFuncSetAttribute(f: *mut c_void, attr: c_int, value: c_int) => FuncSetAttribute, c"cuFuncSetAttribute";
    cuKernelSetAttribute(attr: c_int, value: c_int, k: *mut c_void, dev: c_int) => KernelSetAttribute, c"cuKernelSetAttribute";
    cuLaunchKernel(f: *mut c_void, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
        shared: c_uint, stream: *mut c_void, params: *mut *mut c_void, extra: *mut *mut c_void)
        => LaunchKernel, c"cuLaunchKernel";
    cuLaunchKernel_ptsz(f: *mut c_void, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
        shared: c_uint, stream: *mut c_void, params: *mut *mut c_void, extra: *mut *mut c_void)
        => LaunchKernel, c"cuLaunchKernel_ptsz";
    cuLaunchKernelEx(config: *const real::CUlaunchConfig, f: *mut c_void, params: *mut *mut c_void,
        extra: *mut *mut c_void) => LaunchKernelEx, c"cuLaunchKernelEx";
    cuLaunchKernelEx_ptsz(config: *const real::CUlaunchConfig, f: *mut c_void, params: *mut *mut c_void,
        extra: *mut *mut c_void) => LaunchKernelEx, c"cuLaunchKernelEx_ptsz";
}
