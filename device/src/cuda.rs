//! The CUDA backend, on the driver API through cudarc with dynamic loading: a binary built on a
//! machine without CUDA runs anywhere, and finds libcuda at run time. cudarc panics when libcuda
//! is missing, so [`CudaDevice::open`] checks for it first and returns an error the caller can
//! fall back on. Modules load from the fatbin (SASS for sm_75…sm_90 plus PTX the driver JITs for
//! newer GPUs). Kernel time comes from CUDA events around the launch.
//!
//! One of the two modules of the workspace with unsafe code (the other is the emulator's
//! `hostcpu`, which runs lane loops with the host's FMA): the driver API is a C FFI. Each block
//! says why it is sound in a `SAFETY` comment.
#![allow(unsafe_code)]

use crate::DeviceError;
use crate::api::{Arg, Backend, DevBuf, Device, LaunchConfig, LaunchOutcome, ModuleId};
use cudarc::driver::{CudaContext, result, sys};
use emulator::{TexAddress, TexFilter, TexFormat, TextureDesc};
use std::ffi::{CString, OsStr, c_void};
use std::sync::Arc;
use std::time::Instant;

/// A CUDA GPU (device 0).
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    name: String,
    clock_mhz: f64,
    modules: Vec<sys::CUmodule>,
    allocs: Vec<sys::CUdeviceptr>,
    arrays: Vec<sys::CUarray>,
    textures: Vec<sys::CUtexObject>,
    /// Holds the stream back until a timed launch is fully queued (see [`Gate`]); `None` until
    /// the first launch, or where the driver refused it (then launches are timed ungated).
    gate: Option<Gate>,
    gate_tried: bool,
}

/// A word of pinned, device-mapped host memory that the stream waits on before each timed
/// launch. Why: CUDA events time from when the GPU reaches the start event, and if the host is
/// still submitting the kernel then, the wait for it is counted as kernel time — about 18 µs per
/// launch on the H200 machines here (a virtual machine), more than most small kernels take. With
/// the stream held until start event, kernel and stop event are all queued, the events time the
/// kernel alone (the technique of NVIDIA's nvbench).
struct Gate {
    host: *mut u32,
    dev: sys::CUdeviceptr,
    seq: u32,
}

impl Gate {
    fn new() -> Option<Gate> {
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: a 4-byte pinned allocation, mapped for the device, freed in Drop of CudaDevice.
        let ok = unsafe { sys::cuMemHostAlloc(&mut host, 4, sys::CU_MEMHOSTALLOC_DEVICEMAP) };
        if ok != sys::CUresult::CUDA_SUCCESS || host.is_null() {
            return None;
        }
        let host = host as *mut u32;
        // SAFETY: `host` is the live 4-byte allocation just made.
        unsafe { std::ptr::write_volatile(host, 0) };
        let mut dev = 0;
        // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP.
        let ok = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, host as *mut c_void, 0) };
        if ok != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: allocated above, freed once.
            unsafe { sys::cuMemFreeHost(host as *mut c_void) };
            return None;
        }
        Some(Gate { host, dev, seq: 0 })
    }

    /// Makes `stream` wait until the host opens the gate; false where the driver refused.
    fn close(&mut self, stream: sys::CUstream) -> bool {
        let next = self.seq.wrapping_add(1);
        // SAFETY: `dev` maps the live host word; EQ with a fresh value waits until `open`.
        let ok = unsafe {
            sys::cuStreamWaitValue32_v2(
                stream,
                self.dev,
                next,
                sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_EQ as u32,
            )
        };
        if ok == sys::CUresult::CUDA_SUCCESS {
            self.seq = next;
        }
        ok == sys::CUresult::CUDA_SUCCESS
    }

    fn free(self) {
        // SAFETY: allocated in `new`, freed once (this consumes the gate).
        unsafe { sys::cuMemFreeHost(self.host as *mut c_void) };
    }

    fn open(&self) {
        // SAFETY: the live host word; the GPU polls it, so the write must not be elided.
        unsafe { std::ptr::write_volatile(self.host, self.seq) };
    }
}

/// Set (to anything but empty) in a program's environment, launches are timed without the
/// [`Gate`]. Nsight Compute cannot profile a gated launch: it prepares the kernel inside the
/// launch call, while the stream waits for a gate the host opens only after that call returns.
/// On the GPU machines of 2026-11-27 every ncu run of a warpscope kernel failed so ("Failed to
/// prepare kernel for profiling") and then hung; with this set, the same runs profiled.
/// warpscope's own ncu runs set it.
pub const UNGATED_ENV: &str = "WARPSCOPE_UNGATED";

/// Environment variables whose presence says a profiler or another CUDA tool has injected itself
/// into this process. Nsight Compute 2025.3 sets `NV_COMPUTE_PROFILER_PERFWORKS_DIR`,
/// `NV_TPS_LAUNCH_TOKEN` and the [`PROFILER_ENV_PREFIX`] transport variables, and injects itself
/// with `LD_PRELOAD`, not `CUDA_INJECTION64_PATH` (read from a profiled program's environment on
/// an H100 machine); CUPTI-based tools and Nsight Systems use `CUDA_INJECTION64_PATH`.
const PROFILER_ENV: [&str; 3] = [
    "CUDA_INJECTION64_PATH",
    "NV_COMPUTE_PROFILER_PERFWORKS_DIR",
    "NV_TPS_LAUNCH_TOKEN",
];
/// Nsight's injection transport variables (`NV_NSIGHT_INJECTION_TRANSPORT_TYPE`, ports).
const PROFILER_ENV_PREFIX: &str = "NV_NSIGHT_INJECTION_";

/// Whether launches may be gated, given the environment's `(name, value)` pairs: not when
/// [`UNGATED_ENV`] or a profiler's variable ([`PROFILER_ENV`], [`PROFILER_ENV_PREFIX`]) is set
/// to anything but empty.
fn gate_wanted<K: AsRef<OsStr>, V: AsRef<OsStr>>(env: impl IntoIterator<Item = (K, V)>) -> bool {
    !env.into_iter().any(|(k, v)| {
        let k = k.as_ref().to_string_lossy();
        !v.as_ref().is_empty()
            && (k == UNGATED_ENV
                || PROFILER_ENV.contains(&&*k)
                || k.starts_with(PROFILER_ENV_PREFIX))
    })
}

fn cuda_err(call: &'static str) -> impl Fn(result::DriverError) -> DeviceError {
    move |e| DeviceError::Cuda {
        call,
        message: e.to_string(),
    }
}

impl CudaDevice {
    /// Opens GPU `ordinal`, or says why it cannot (no driver, no GPU, driver error).
    pub fn open(ordinal: usize) -> Result<Self, DeviceError> {
        // SAFETY: only probes whether the shared library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Err(DeviceError::NoDriver);
        }
        result::init().map_err(|e| DeviceError::NoGpu(format!("cuInit failed: {e}")))?;
        let count = result::device::get_count().map_err(cuda_err("cuDeviceGetCount"))?;
        if count as usize <= ordinal {
            return Err(DeviceError::NoGpu(format!(
                "the driver reports {count} device(s), device {ordinal} was asked for"
            )));
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| DeviceError::NoGpu(format!("cannot create a context: {e}")))?;
        let name = ctx.name().map_err(cuda_err("cuDeviceGetName"))?;
        let khz = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
            .map_err(cuda_err("cuDeviceGetAttribute(CLOCK_RATE)"))?;
        Ok(CudaDevice {
            ctx,
            name,
            clock_mhz: khz as f64 / 1000.0,
            modules: Vec::new(),
            allocs: Vec::new(),
            arrays: Vec::new(),
            textures: Vec::new(),
            gate: None,
            gate_tried: false,
        })
    }

    fn bind(&self) -> Result<(), DeviceError> {
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("cuCtxSetCurrent"))
    }

    fn function(&self, m: ModuleId, kernel: &str) -> Result<sys::CUfunction, DeviceError> {
        let module = *self.modules.get(m.0).ok_or_else(|| DeviceError::Launch {
            what: format!("kernel {kernel:?}"),
            reason: format!("module {} was never loaded", m.0),
        })?;
        let cname = CString::new(kernel).map_err(|_| DeviceError::NoSuchKernel {
            kernel: kernel.into(),
            available: "(name contains NUL)".into(),
        })?;
        // SAFETY: `module` is a loaded, not unloaded module of this context.
        unsafe { result::module::get_function(module, cname) }.map_err(|_| {
            DeviceError::NoSuchKernel {
                kernel: kernel.into(),
                available: "see the module's PTX (.entry names)".into(),
            }
        })
    }
}

fn array_format(f: TexFormat) -> sys::CUarray_format {
    match f {
        TexFormat::U8 => sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
        TexFormat::U16 => sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
        TexFormat::F32 => sys::CUarray_format::CU_AD_FORMAT_FLOAT,
    }
}

fn texel_bytes(desc: &TextureDesc) -> usize {
    let e = match desc.format {
        TexFormat::U8 => 1,
        TexFormat::U16 => 2,
        TexFormat::F32 => 4,
    };
    e * desc.channels as usize
}

fn address_mode(a: TexAddress) -> sys::CUaddress_mode {
    match a {
        TexAddress::Wrap => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
        TexAddress::Clamp => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
        TexAddress::Mirror => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
        TexAddress::Border => sys::CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
    }
}

impl Device for CudaDevice {
    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn clock_mhz(&self) -> f64 {
        self.clock_mhz
    }

    fn properties(&self) -> crate::DeviceProperties {
        use sys::CUdevice_attribute as A;
        let attr = |a: A| self.ctx.attribute(a).ok();
        let mut driver = 0;
        // SAFETY: writes one int; the driver was initialised by `open`.
        let driver_ok = unsafe { sys::cuDriverGetVersion(&mut driver) }
            .result()
            .is_ok();
        crate::DeviceProperties {
            compute_capability: self
                .ctx
                .compute_capability()
                .ok()
                .map(|(major, minor)| format!("{major}.{minor}")),
            driver_cuda_version: driver_ok
                .then(|| format!("{}.{}", driver / 1000, (driver % 1000) / 10)),
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map(|v| v.max(0) as u32),
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(|v| v.max(0) as u64),
            memory_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
                .map(|khz| f64::from(khz) / 1000.0),
            memory_bus_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
                .map(|v| v.max(0) as u32),
            total_memory_bytes: self.ctx.total_mem().ok().map(|b| b as u64),
            l2_fetch_granularity_bytes: self
                .bind()
                .ok()
                .and_then(|()| {
                    result::ctx::get_limit(sys::CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY).ok()
                })
                .and_then(|b| u32::try_from(b).ok()),
            ..crate::DeviceProperties::basic(Backend::Gpu, self.name.clone(), self.clock_mhz)
        }
    }

    fn free_memory_bytes(&self) -> u64 {
        self.ctx
            .mem_get_info()
            .map(|(free, _)| free as u64)
            .unwrap_or(0)
    }

    fn alloc(&mut self, bytes: u64) -> Result<DevBuf, DeviceError> {
        self.bind()?;
        // SAFETY: a plain device allocation in the bound context, freed on drop.
        let addr = unsafe { result::malloc_sync(bytes.max(1) as usize) }.map_err(|_| {
            DeviceError::OutOfMemory {
                what: "a device buffer".into(),
                needed_bytes: bytes,
                available_bytes: self.free_memory_bytes(),
            }
        })?;
        self.allocs.push(addr);
        Ok(DevBuf { addr, bytes })
    }

    fn free(&mut self, buf: &DevBuf) -> Result<(), DeviceError> {
        self.bind()?;
        let i = self
            .allocs
            .iter()
            .position(|&a| a == buf.addr)
            .ok_or_else(|| DeviceError::Launch {
                what: "device free".into(),
                reason: format!("{:#x} is not a live allocation of this device", buf.addr),
            })?;
        self.allocs.swap_remove(i);
        // SAFETY: `buf.addr` is a live allocation of this context, removed from the list above.
        unsafe { result::free_sync(buf.addr) }.map_err(cuda_err("cuMemFree"))
    }

    fn upload(&mut self, buf: &DevBuf, data: &[u8]) -> Result<(), DeviceError> {
        self.bind()?;
        check_len(buf, data.len())?;
        // SAFETY: `buf` is an allocation of at least data.len() bytes.
        unsafe { result::memcpy_htod_sync(buf.addr, data) }.map_err(cuda_err("cuMemcpyHtoD"))
    }

    fn download(&mut self, buf: &DevBuf, out: &mut [u8]) -> Result<(), DeviceError> {
        self.bind()?;
        check_len(buf, out.len())?;
        // SAFETY: `buf` is an allocation of at least out.len() bytes.
        unsafe { result::memcpy_dtoh_sync(out, buf.addr) }.map_err(cuda_err("cuMemcpyDtoH"))
    }

    fn create_texture(&mut self, desc: &TextureDesc, data: &[u8]) -> Result<u64, DeviceError> {
        self.bind()?;
        let texel = texel_bytes(desc);
        let (w, h, d) = (
            desc.width as usize,
            desc.height.max(1) as usize,
            desc.depth.max(1) as usize,
        );
        let needed = w * h * d * texel;
        if data.len() != needed {
            return Err(DeviceError::Launch {
                what: "texture".into(),
                reason: format!(
                    "{} bytes of texel data, {w}x{h}x{d} texels need {needed}",
                    data.len()
                ),
            });
        }
        // SAFETY: zero is a valid bit pattern here: the resource type's and the union's enums
        // have a zero variant (ARRAY), and the rest are integers and pointers.
        let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        if let Some(addr) = desc.linear_buffer {
            res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
            res.res.linear.devPtr = addr;
            res.res.linear.format = array_format(desc.format);
            res.res.linear.numChannels = desc.channels as u32;
            res.res.linear.sizeInBytes = needed;
        } else {
            let ad = sys::CUDA_ARRAY3D_DESCRIPTOR {
                Width: w,
                Height: if desc.dims >= 2 { h } else { 0 },
                Depth: if desc.dims >= 3 { d } else { 0 },
                Format: array_format(desc.format),
                NumChannels: desc.channels as u32,
                Flags: 0,
            };
            let mut array = std::ptr::null_mut();
            // SAFETY: valid descriptor; the array is destroyed on drop.
            unsafe { sys::cuArray3DCreate_v2(&mut array, &ad) }
                .result()
                .map_err(cuda_err("cuArray3DCreate"))?;
            self.arrays.push(array);
            // Written out in full: its memory-type fields are enums without a zero variant, so
            // `mem::zeroed` is undefined behaviour (and aborts at run time).
            let cp = sys::CUDA_MEMCPY3D {
                srcXInBytes: 0,
                srcY: 0,
                srcZ: 0,
                srcLOD: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: data.as_ptr() as *const c_void,
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                reserved0: std::ptr::null_mut(),
                srcPitch: w * texel,
                srcHeight: h,
                dstXInBytes: 0,
                dstY: 0,
                dstZ: 0,
                dstLOD: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
                dstHost: std::ptr::null_mut(),
                dstDevice: 0,
                dstArray: array,
                reserved1: std::ptr::null_mut(),
                dstPitch: 0,
                dstHeight: 0,
                WidthInBytes: w * texel,
                Height: h,
                Depth: d,
            };
            // SAFETY: `data` holds exactly the copied extent.
            unsafe { sys::cuMemcpy3D_v2(&cp) }
                .result()
                .map_err(cuda_err("cuMemcpy3D"))?;
            res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
            res.res.array.hArray = array;
        }
        // SAFETY: zero is a valid texture descriptor (WRAP and POINT are the enums' zeros).
        let mut td: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
        td.addressMode = desc.address.map(address_mode);
        td.filterMode = match desc.filter {
            TexFilter::Point => sys::CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            TexFilter::Linear => sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
        };
        let mut flags = 0;
        if desc.normalized_coords {
            flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
        }
        if !desc.normalized_read && desc.format != TexFormat::F32 {
            flags |= sys::CU_TRSF_READ_AS_INTEGER;
        }
        td.flags = flags;
        let mut tex = 0;
        // SAFETY: valid resource and texture descriptors.
        unsafe { sys::cuTexObjectCreate(&mut tex, &res, &td, std::ptr::null()) }
            .result()
            .map_err(cuda_err("cuTexObjectCreate"))?;
        self.textures.push(tex);
        Ok(tex)
    }

    fn load(&mut self, ptx: &str, fatbin: Option<&[u8]>) -> Result<ModuleId, DeviceError> {
        self.bind()?;
        let module = match fatbin {
            // SAFETY: a fatbin image produced by nvcc, alive for the call.
            Some(image) => unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
                .map_err(cuda_err("cuModuleLoadData(fatbin)"))?,
            None => {
                let text = CString::new(ptx).map_err(|_| DeviceError::Launch {
                    what: "PTX module".into(),
                    reason: "PTX text contains a NUL byte".into(),
                })?;
                // SAFETY: NUL-terminated PTX text, alive for the call.
                unsafe { result::module::load_data(text.as_ptr() as *const c_void) }
                    .map_err(cuda_err("cuModuleLoadData(PTX JIT)"))?
            }
        };
        self.modules.push(module);
        Ok(ModuleId(self.modules.len() - 1))
    }

    fn write_symbol(&mut self, m: ModuleId, name: &str, data: &[u8]) -> Result<(), DeviceError> {
        self.bind()?;
        let module = *self.modules.get(m.0).ok_or_else(|| DeviceError::Launch {
            what: format!("symbol {name:?}"),
            reason: "module was never loaded".into(),
        })?;
        let cname = CString::new(name).map_err(|_| DeviceError::Launch {
            what: format!("symbol {name:?}"),
            reason: "name contains NUL".into(),
        })?;
        // SAFETY: loaded module.
        let (ptr, bytes) = unsafe { result::module::get_global(module, cname) }
            .map_err(cuda_err("cuModuleGetGlobal"))?;
        if bytes != data.len() {
            return Err(DeviceError::Launch {
                what: format!("symbol {name:?}"),
                reason: format!("is {bytes} bytes, {} given", data.len()),
            });
        }
        // SAFETY: the symbol is exactly data.len() bytes.
        unsafe { result::memcpy_htod_sync(ptr, data) }.map_err(cuda_err("cuMemcpyHtoD(symbol)"))
    }

    fn occupancy(
        &mut self,
        m: ModuleId,
        kernel: &str,
        cfg: &LaunchConfig,
    ) -> Result<u32, DeviceError> {
        self.bind()?;
        let f = self.function(m, kernel)?;
        // SAFETY: `f` is a function of a loaded module.
        let n = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                f,
                cfg.block.volume() as i32,
                cfg.dynamic_shared_bytes as usize,
            )
        }
        .map_err(cuda_err("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        Ok(n.max(0) as u32)
    }

    fn launch(
        &mut self,
        m: ModuleId,
        kernel: &str,
        cfg: &LaunchConfig,
        args: &[Arg],
    ) -> Result<LaunchOutcome, DeviceError> {
        self.bind()?;
        let f = self.function(m, kernel)?;
        if cfg.dynamic_shared_bytes > 48 * 1024 {
            // SAFETY: raising the opt-in dynamic shared limit of a loaded function.
            unsafe {
                result::function::set_function_attribute(
                    f,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.dynamic_shared_bytes as i32,
                )
            }
            .map_err(cuda_err(
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
            ))?;
        }
        let mut blobs: Vec<Vec<u8>> = args.iter().map(Arg::to_bytes).collect();
        // 8-byte aligned copies: the driver reads each parameter through its pointer.
        let mut words: Vec<Vec<u64>> = blobs
            .iter_mut()
            .map(|b| {
                let mut w = vec![0u64; b.len().div_ceil(8).max(1)];
                // SAFETY: `w` has at least b.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(b.as_ptr(), w.as_mut_ptr() as *mut u8, b.len())
                };
                w
            })
            .collect();
        let mut params: Vec<*mut c_void> = words
            .iter_mut()
            .map(|w| w.as_mut_ptr() as *mut c_void)
            .collect();
        let start = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(cuda_err("cuEventCreate"))?;
        let stop = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(cuda_err("cuEventCreate"))?;
        let stream = std::ptr::null_mut();
        if !self.gate_tried {
            self.gate_tried = true;
            if gate_wanted(std::env::vars_os()) {
                self.gate = Gate::new();
            }
        }
        if self.gate.as_mut().is_some_and(|g| !g.close(stream))
            && let Some(g) = self.gate.take()
        {
            g.free();
        }
        let wall = Instant::now();
        // SAFETY: `f` belongs to a loaded module; params point to live, aligned argument copies
        // whose sizes the caller matched to the kernel signature.
        let queued = unsafe {
            result::event::record(start, stream)
                .and_then(|_| {
                    result::launch_kernel(
                        f,
                        (cfg.grid.x, cfg.grid.y, cfg.grid.z),
                        (cfg.block.x, cfg.block.y, cfg.block.z),
                        cfg.dynamic_shared_bytes,
                        stream,
                        &mut params,
                    )
                })
                .and_then(|_| result::event::record(stop, stream))
        };
        // Opened whatever was queued: a stream left waiting would hang every later call.
        if let Some(g) = &self.gate {
            g.open();
        }
        // SAFETY: `stop` was created above (and recorded, unless `queued` says why not).
        let launched = queued.and_then(|_| unsafe { result::event::synchronize(stop) });
        // SAFETY: both events were recorded (or the launch failed); elapsed is read only on success.
        let elapsed = launched.and_then(|_| unsafe { result::event::elapsed(start, stop) });
        // SAFETY: events created above, destroyed once.
        unsafe {
            let _ = result::event::destroy(start);
            let _ = result::event::destroy(stop);
        }
        let kernel_ms = elapsed.map_err(|e| DeviceError::Launch {
            what: format!("kernel {kernel:?} on {}", self.name),
            reason: format!("{e} (a fault in the kernel: an out-of-bounds access, a trap, or a launch configuration the GPU rejects)"),
        })?;
        Ok(LaunchOutcome {
            kernel_ms: kernel_ms as f64,
            cycles: None,
            stats: None,
            wall_seconds: wall.elapsed().as_secs_f64(),
            loads: None,
            thread_seconds: Vec::new(),
        })
    }
}

fn check_len(buf: &DevBuf, len: usize) -> Result<(), DeviceError> {
    if len as u64 > buf.bytes {
        return Err(DeviceError::Launch {
            what: "device copy".into(),
            reason: format!("{len} bytes do not fit a buffer of {}", buf.bytes),
        });
    }
    Ok(())
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        if self.bind().is_err() {
            return;
        }
        // SAFETY: each handle was created by this device and is released once.
        unsafe {
            for t in self.textures.drain(..) {
                let _ = sys::cuTexObjectDestroy(t);
            }
            for a in self.arrays.drain(..) {
                let _ = sys::cuArrayDestroy(a);
            }
            for p in self.allocs.drain(..) {
                let _ = result::free_sync(p);
            }
            for m in self.modules.drain(..) {
                let _ = result::module::unload(m);
            }
            if let Some(g) = self.gate.take() {
                g.free();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_are_not_gated_under_a_profiler_or_when_asked() {
        let env = |pairs: &[(&'static str, &'static str)]| gate_wanted(pairs.iter().copied());
        assert!(env(&[]));
        assert!(env(&[
            ("PATH", "/usr/bin"),
            ("NV_CUDA_LIB_VERSION", "13.0.2-1")
        ]));
        assert!(
            env(&[("CUDA_INJECTION64_PATH", ""), (UNGATED_ENV, "")]),
            "empty is unset"
        );
        assert!(!env(&[(
            "CUDA_INJECTION64_PATH",
            "/opt/nsight-systems/libToolsInjection64.so"
        )]));
        // What Nsight Compute 2025.3.1 set in a profiled program's environment.
        assert!(!env(&[("NV_NSIGHT_INJECTION_TRANSPORT_TYPE", "uds")]));
        assert!(!env(&[("NV_TPS_LAUNCH_TOKEN", "Interactive Profile")]));
        assert!(!env(&[(
            "NV_COMPUTE_PROFILER_PERFWORKS_DIR",
            "/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/."
        )]));
        assert!(!env(&[(UNGATED_ENV, "1")]));
    }
}
