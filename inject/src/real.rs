//! The driver's own functions: glibc's `dlsym` behind the one this library exports, libcuda's
//! entry points by name, the slots that remember which driver function each hook stands for, and
//! the [`profile::Driver`] the interceptor runs its probed launches through.

use profile::{DeviceInfo, Driver, Handle, LaunchFailure, LaunchShape};
use std::ffi::{CStr, c_char, c_float, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

pub type CUresult = c_int;
pub const CUDA_SUCCESS: CUresult = 0;
/// What a hook returns when the driver's function it stands for is gone (it never is once
/// recorded; the check keeps a null pointer from being called).
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
pub const CU_LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
pub const CU_LAUNCH_PARAM_BUFFER_SIZE: usize = 2;
/// `CU_STREAM_PER_THREAD`: the per-thread default stream, named explicitly.
const CU_STREAM_PER_THREAD: Handle = 2;
const CU_DEVICE_ATTRIBUTE_CLOCK_RATE: c_int = 13;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
const CU_FUNC_ATTRIBUTE_NUM_REGS: c_int = 4;
const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

/// `CUlaunchConfig` of `cuda.h`.
#[repr(C)]
pub struct CUlaunchConfig {
    pub grid_dim_x: c_uint,
    pub grid_dim_y: c_uint,
    pub grid_dim_z: c_uint,
    pub block_dim_x: c_uint,
    pub block_dim_y: c_uint,
    pub block_dim_z: c_uint,
    pub shared_mem_bytes: c_uint,
    pub h_stream: *mut c_void,
    pub attrs: *mut c_void,
    pub num_attrs: c_uint,
}

pub type ModuleLoadData = unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> CUresult;
pub type ModuleLoadDataEx = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
) -> CUresult;
pub type GetFunction =
    unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> CUresult;
pub type LibraryLoadData = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_void,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
) -> CUresult;
pub type KernelGetFunction = unsafe extern "C" fn(*mut *mut c_void, *mut c_void) -> CUresult;
pub type FuncSetAttribute = unsafe extern "C" fn(*mut c_void, c_int, c_int) -> CUresult;
pub type KernelSetAttribute = unsafe extern "C" fn(c_int, c_int, *mut c_void, c_int) -> CUresult;
pub type LaunchKernel = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;
pub type LaunchKernelEx = unsafe extern "C" fn(
    *const CUlaunchConfig,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;
pub type GetProcAddress =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CUresult;

// ---------------------------------------------------------------- dlsym and libcuda

static REAL_DLSYM: AtomicUsize = AtomicUsize::new(0);
static LIBCUDA: AtomicUsize = AtomicUsize::new(0);
static GET_PROC_ADDRESS: AtomicUsize = AtomicUsize::new(0);

type Dlsym = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// glibc's `dlsym`, found by version (the unversioned name would find this library's).
///
/// # Safety
/// As `dlsym`.
pub unsafe fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let mut f = REAL_DLSYM.load(Ordering::Acquire);
    if f == 0 {
        for version in [c"GLIBC_2.34", c"GLIBC_2.2.5"] {
            // SAFETY: dlvsym with constant C strings; RTLD_NEXT finds the next object's symbol.
            f = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) }
                as usize;
            if f != 0 {
                break;
            }
        }
        REAL_DLSYM.store(f, Ordering::Release);
    }
    if f == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: `f` is glibc's dlsym.
    let f: Dlsym = unsafe { std::mem::transmute::<usize, Dlsym>(f) };
    unsafe { f(handle, symbol) }
}

/// Whether `address` lies in the driver library (`libcuda.so*`).
pub fn in_libcuda(address: *mut c_void) -> bool {
    // SAFETY: dladdr only reads its address argument and fills the struct.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return false;
    }
    // SAFETY: dladdr's file name is a C string owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let file = path.rsplit('/').next().unwrap_or(&path);
    file.starts_with("libcuda.so")
}

/// The driver library's handle: the one the program loaded, else loaded now.
fn libcuda() -> *mut c_void {
    let h = LIBCUDA.load(Ordering::Acquire);
    if h != 0 {
        return h as *mut c_void;
    }
    // SAFETY: dlopen with a constant name; NOLOAD first, so the program's copy is the one used.
    let mut h =
        unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if h.is_null() {
        h = unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW) };
    }
    LIBCUDA.store(h as usize, Ordering::Release);
    h
}

/// An entry point of the driver library by its exported name; null where there is none.
pub fn libcuda_symbol(name: &CStr) -> *mut c_void {
    let h = libcuda();
    if h.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a valid handle and a C string.
    unsafe { dlsym(h, name.as_ptr()) }
}

/// Remembers the driver's `cuGetProcAddress_v2` the program found, and gives this library's.
pub fn remember_get_proc_address(found: *mut c_void) -> *mut c_void {
    GET_PROC_ADDRESS.store(found as usize, Ordering::Release);
    crate::cuGetProcAddress_v2 as *mut c_void
}

/// The driver's `cuGetProcAddress_v2`.
pub fn get_proc_address() -> Option<GetProcAddress> {
    let mut f = GET_PROC_ADDRESS.load(Ordering::Acquire);
    if f == 0 {
        f = libcuda_symbol(c"cuGetProcAddress_v2") as usize;
        GET_PROC_ADDRESS.store(f, Ordering::Release);
    }
    // SAFETY: the driver's cuGetProcAddress_v2 has this signature.
    (f != 0).then(|| unsafe { std::mem::transmute::<usize, GetProcAddress>(f) })
}

/// The stream a launch ran on as a handle another call can name: the per-thread default stream
/// of a `_ptsz` launch on stream 0 is `CU_STREAM_PER_THREAD`.
pub fn stream_handle(stream: *mut c_void, ptsz: bool) -> Handle {
    match (stream.is_null(), ptsz) {
        (true, true) => CU_STREAM_PER_THREAD,
        _ => stream as Handle,
    }
}

// ---------------------------------------------------------------- slots

/// A watched entry point: each has two slots for the driver functions it stands for (the plain
/// and the per-thread-stream variant of one symbol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    ModuleLoadData,
    ModuleLoadDataEx,
    ModuleLoadFatBinary,
    ModuleGetFunction,
    LibraryLoadData,
    LibraryGetKernel,
    KernelGetFunction,
    FuncSetAttribute,
    KernelSetAttribute,
    LaunchKernel,
    LaunchKernelEx,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
static SLOTS: [[AtomicUsize; 2]; Slot::COUNT] = [EMPTY; Slot::COUNT];

impl Slot {
    pub const COUNT: usize = 11;
    const ALL: [Slot; Slot::COUNT] = [
        Slot::ModuleLoadData,
        Slot::ModuleLoadDataEx,
        Slot::ModuleLoadFatBinary,
        Slot::ModuleGetFunction,
        Slot::LibraryLoadData,
        Slot::LibraryGetKernel,
        Slot::KernelGetFunction,
        Slot::FuncSetAttribute,
        Slot::KernelSetAttribute,
        Slot::LaunchKernel,
        Slot::LaunchKernelEx,
    ];

    /// The symbol's base name, as `cuGetProcAddress` takes it.
    pub fn base(self) -> &'static str {
        match self {
            Slot::ModuleLoadData => "cuModuleLoadData",
            Slot::ModuleLoadDataEx => "cuModuleLoadDataEx",
            Slot::ModuleLoadFatBinary => "cuModuleLoadFatBinary",
            Slot::ModuleGetFunction => "cuModuleGetFunction",
            Slot::LibraryLoadData => "cuLibraryLoadData",
            Slot::LibraryGetKernel => "cuLibraryGetKernel",
            Slot::KernelGetFunction => "cuKernelGetFunction",
            Slot::FuncSetAttribute => "cuFuncSetAttribute",
            Slot::KernelSetAttribute => "cuKernelSetAttribute",
            Slot::LaunchKernel => "cuLaunchKernel",
            Slot::LaunchKernelEx => "cuLaunchKernelEx",
        }
    }

    pub fn of(base: &str) -> Option<Slot> {
        Slot::ALL.into_iter().find(|s| s.base() == base)
    }

    /// The slot that holds driver function `found`: the one it is already in, else a free one;
    /// `None` when both hold other functions (the symbol is then passed on unwatched).
    pub fn take(self, found: *mut c_void) -> Option<usize> {
        let slots = &SLOTS[self as usize];
        let found = found as usize;
        (0..2).find(|&i| {
            match slots[i].compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => true,
                Err(held) => held == found,
            }
        })
    }

    /// The driver function in `slot`, as the function type `F` of this symbol.
    pub fn get<F: Copy>(self, slot: usize) -> Option<F> {
        if std::mem::size_of::<F>() != std::mem::size_of::<usize>() {
            return None;
        }
        let f = SLOTS[self as usize][slot].load(Ordering::Acquire);
        // SAFETY: only function pointers of this slot's symbol are stored in it, and `F` is that
        // symbol's function pointer type (the hooks name it), of a pointer's size.
        (f != 0).then(|| unsafe { std::mem::transmute_copy::<usize, F>(&f) })
    }

    /// Whether the driver function in `slot` is the symbol's per-thread-stream variant.
    pub fn is_ptsz(self, slot: usize) -> bool {
        let held = SLOTS[self as usize][slot].load(Ordering::Acquire);
        let Ok(name) = std::ffi::CString::new(format!("{}_ptsz", self.base())) else {
            return false;
        };
        held != 0 && held == libcuda_symbol(&name) as usize
    }
}

// ---------------------------------------------------------------- the driver for probed launches

/// The driver's functions a probed launch uses, by their exported (versioned) names.
pub struct Real;

/// Looks up a driver function and calls it; an error when the driver has no such function.
macro_rules! call {
    ($name:literal: fn($($ty:ty),*) ($($arg:expr),*)) => {{
        let f = libcuda_symbol($name);
        if f.is_null() {
            Err(format!("the driver has no {}", $name.to_string_lossy()))
        } else {
            // SAFETY: the driver's function of this name has this signature.
            let f: unsafe extern "C" fn($($ty),*) -> CUresult = unsafe { std::mem::transmute(f) };
            let result = unsafe { f($($arg),*) };
            if result == CUDA_SUCCESS { Ok(()) } else { Err(error_string(result)) }
        }
    }};
}

/// The driver's words for an error code.
fn error_string(code: CUresult) -> String {
    let mut text: *const c_char = std::ptr::null();
    let described: Result<(), String> =
        call!(c"cuGetErrorString": fn(CUresult, *mut *const c_char)(code, &mut text));
    match (described, text.is_null()) {
        // SAFETY: the driver's static description of the code.
        (Ok(()), false) => format!(
            "{} (CUresult {code})",
            unsafe { CStr::from_ptr(text) }.to_string_lossy()
        ),
        _ => format!("CUresult {code}"),
    }
}

impl Real {
    pub fn driver() -> Real {
        Real
    }

    /// The driver's own `cuLaunchKernel` (or `_ptsz`).
    pub fn launch_kernel(ptsz: bool) -> Option<LaunchKernel> {
        let name = if ptsz {
            c"cuLaunchKernel_ptsz"
        } else {
            c"cuLaunchKernel"
        };
        let f = libcuda_symbol(name);
        // SAFETY: the driver's cuLaunchKernel has this signature.
        (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, LaunchKernel>(f) })
    }

    /// Runs `launch` between two events on `stream` and waits for the second: its result, and
    /// the time between the events where both were recorded.
    pub fn timed(
        &mut self,
        stream: Handle,
        launch: impl FnOnce() -> CUresult,
    ) -> (CUresult, Option<f64>) {
        let (mut start, mut end): (*mut c_void, *mut c_void) =
            (std::ptr::null_mut(), std::ptr::null_mut());
        let events = call!(c"cuEventCreate": fn(*mut *mut c_void, c_uint)(&mut start, 0))
            .and_then(|()| call!(c"cuEventCreate": fn(*mut *mut c_void, c_uint)(&mut end, 0)))
            .and_then(|()| {
                call!(c"cuEventRecord": fn(*mut c_void, *mut c_void)(start, stream as *mut c_void))
            });
        let result = launch();
        let mut ms: c_float = 0.0;
        let elapsed = events
            .and_then(|()| {
                call!(c"cuEventRecord": fn(*mut c_void, *mut c_void)(end, stream as *mut c_void))
            })
            .and_then(|()| call!(c"cuEventSynchronize": fn(*mut c_void)(end)))
            .and_then(|()| {
                call!(c"cuEventElapsedTime": fn(*mut c_float, *mut c_void, *mut c_void)(&mut ms, start, end))
            });
        for e in [start, end].into_iter().filter(|e| !e.is_null()) {
            let _ = call!(c"cuEventDestroy_v2": fn(*mut c_void)(e));
        }
        (
            result,
            (result == CUDA_SUCCESS && elapsed.is_ok()).then_some(f64::from(ms)),
        )
    }
}

impl Driver for Real {
    fn device(&mut self) -> Result<DeviceInfo, String> {
        let mut dev: c_int = 0;
        call!(c"cuCtxGetDevice": fn(*mut c_int)(&mut dev))?;
        let attribute = |a: c_int| -> Result<c_int, String> {
            let mut v: c_int = 0;
            call!(c"cuDeviceGetAttribute": fn(*mut c_int, c_int, c_int)(&mut v, a, dev))?;
            Ok(v)
        };
        let mut name = [0 as c_char; 256];
        call!(c"cuDeviceGetName": fn(*mut c_char, c_int, c_int)(name.as_mut_ptr(), 256, dev))?;
        Ok(DeviceInfo {
            // SAFETY: the driver wrote a NUL-terminated name into the buffer.
            name: unsafe { CStr::from_ptr(name.as_ptr()) }
                .to_string_lossy()
                .into_owned(),
            clock_mhz: f64::from(attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?) / 1e3,
            arch: (attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
                + attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?)
                as u32,
        })
    }

    fn registers(&mut self, function: Handle) -> Result<u32, String> {
        let mut v: c_int = 0;
        call!(c"cuFuncGetAttribute": fn(*mut c_int, c_int, *mut c_void)(
            &mut v, CU_FUNC_ATTRIBUTE_NUM_REGS, function as *mut c_void))?;
        u32::try_from(v).map_err(|_| format!("{v} registers"))
    }

    fn load_ptx(&mut self, ptx: &str) -> Result<Handle, String> {
        let text = std::ffi::CString::new(ptx).map_err(|_| "PTX with a NUL byte".to_string())?;
        let mut log = vec![0u8; 16 << 10];
        let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut module: *mut c_void = std::ptr::null_mut();
        call!(c"cuModuleLoadDataEx": fn(*mut *mut c_void, *const c_void, c_uint, *mut c_int, *mut *mut c_void)(
            &mut module, text.as_ptr() as *const c_void, 2, options.as_mut_ptr(), values.as_mut_ptr()))
        .map_err(|e| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            format!("{e}: {}", String::from_utf8_lossy(&log[..end]).trim())
        })?;
        Ok(module as Handle)
    }

    fn function(&mut self, module: Handle, name: &str) -> Result<Handle, String> {
        let name =
            std::ffi::CString::new(name).map_err(|_| "a name with a NUL byte".to_string())?;
        let mut f: *mut c_void = std::ptr::null_mut();
        call!(c"cuModuleGetFunction": fn(*mut *mut c_void, *mut c_void, *const c_char)(
            &mut f, module as *mut c_void, name.as_ptr()))?;
        Ok(f as Handle)
    }

    fn set_attribute(
        &mut self,
        function: Handle,
        attribute: i32,
        value: i32,
    ) -> Result<(), String> {
        call!(c"cuFuncSetAttribute": fn(*mut c_void, c_int, c_int)(
            function as *mut c_void, attribute, value))
    }

    fn alloc(&mut self, bytes: u64) -> Result<u64, String> {
        let mut ptr: u64 = 0;
        call!(c"cuMemAlloc_v2": fn(*mut u64, usize)(&mut ptr, bytes as usize))?;
        Ok(ptr)
    }

    fn free(&mut self, ptr: u64) {
        let _ = call!(c"cuMemFree_v2": fn(u64)(ptr));
    }

    fn upload(&mut self, ptr: u64, data: &[u8]) -> Result<(), String> {
        call!(c"cuMemcpyHtoD_v2": fn(u64, *const c_void, usize)(
            ptr, data.as_ptr() as *const c_void, data.len()))
    }

    fn download(&mut self, ptr: u64, out: &mut [u8]) -> Result<(), String> {
        call!(c"cuMemcpyDtoH_v2": fn(*mut c_void, u64, usize)(
            out.as_mut_ptr() as *mut c_void, ptr, out.len()))
    }

    fn launch_timed(
        &mut self,
        function: Handle,
        shape: &LaunchShape,
        params: &[Vec<u8>],
    ) -> Result<f64, LaunchFailure> {
        let launch = Real::launch_kernel(false)
            .ok_or_else(|| LaunchFailure::NotLaunched("the driver has no cuLaunchKernel".into()))?;
        // 8-byte aligned copies: the driver reads each parameter through its pointer.
        let mut words: Vec<Vec<u64>> = params
            .iter()
            .map(|p| {
                let mut w = vec![0u64; p.len().div_ceil(8).max(1)];
                // SAFETY: `w` holds at least p.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(p.as_ptr(), w.as_mut_ptr() as *mut u8, p.len())
                };
                w
            })
            .collect();
        let mut pointers: Vec<*mut c_void> = words
            .iter_mut()
            .map(|w| w.as_mut_ptr() as *mut c_void)
            .collect();
        let (g, b) = (shape.grid, shape.block);
        let (result, ms) = self.timed(shape.stream, || {
            // SAFETY: a function of the program's context, parameters laid out for its
            // signature, on the program's stream.
            unsafe {
                launch(
                    function as *mut c_void,
                    g[0],
                    g[1],
                    g[2],
                    b[0],
                    b[1],
                    b[2],
                    shape.shared_bytes,
                    shape.stream as *mut c_void,
                    pointers.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
        });
        match (result, ms) {
            (CUDA_SUCCESS, Some(ms)) => Ok(ms),
            (CUDA_SUCCESS, None) => Err(LaunchFailure::Failed(
                "launched, but its end could not be waited for".into(),
            )),
            (code, _) => Err(LaunchFailure::NotLaunched(error_string(code))),
        }
    }

    fn capturing(&mut self, stream: Handle) -> bool {
        let mut status: c_int = 0;
        // Unknown counts as capturing: launching and waiting there would break the capture.
        call!(c"cuStreamIsCapturing": fn(*mut c_void, *mut c_int)(stream as *mut c_void, &mut status))
            .map_or(true, |()| status != 0)
    }
}
