/* A stand-in for the driver (libcuda.so.1) that records what reaches it, so the preloaded
 * library's hooks can be tested without a GPU. Each entry point appends a line to $STUB_LOG.
 * STUB_JIT=fail makes cuModuleLoadDataEx refuse (as the driver refuses PTX it cannot compile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static FILE *out(void) {
    static FILE *f;
    if (!f) {
        f = fopen(getenv("STUB_LOG"), "a");
        setvbuf(f, NULL, _IONBF, 0);
    }
    return f;
}
static void launched(const char *variant, void *f, void **params, void **extra) {
    fprintf(out(), "launch %p %s", f, variant);
    if (params) fprintf(out(), " arg0=%d", *(int *)params[0]);
    /* The probed kernel takes the program's two parameters and the log last. */
    if (params && f == (void *)0x400) fprintf(out(), " log=%p", *(void **)params[2]);
    if (extra) fprintf(out(), " extra arg0=%d", *(int *)extra[1]);
    fprintf(out(), "\n");
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned sh, void *s, void **params, void **extra) {
    launched("legacy", f, params, extra);
    return 0;
}
CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned sh, void *s, void **params,
                             void **extra) {
    launched("ptsz", f, params, extra);
    return 0;
}
CUresult cuModuleLoadData(void **m, const void *image) { *m = (void *)0x100; return 0; }
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *o, void **v) {
    const char *jit = getenv("STUB_JIT");
    if (jit && strcmp(jit, "fail") == 0) {
        if (n >= 1 && o[0] == 5) strcpy((char *)v[0], "ptxas fatal: stub refuses");
        return 218;
    }
    fprintf(out(), "jit\n");
    *m = (void *)0x300;
    return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    *f = m == (void *)0x300 ? (void *)0x400 : (void *)0x200;
    return 0;
}
CUresult cuGetErrorString(int code, const char **s) { *s = "stub error"; return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuDeviceGetAttribute(int *v, int a, int d) {
    *v = a == 13 ? 1000000 : a == 75 ? 9 : 0;
    return 0;
}
CUresult cuDeviceGetName(char *n, int len, int d) { strncpy(n, "Stub GPU", len); return 0; }
CUresult cuStreamIsCapturing(void *s, int *st) { *st = 0; return 0; }
CUresult cuFuncGetAttribute(int *v, int a, void *f) { *v = 32; return 0; }
CUresult cuFuncSetAttribute(void *f, int a, int v) { return 0; }
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
    *p = (unsigned long long)calloc(1, n);
    fprintf(out(), "alloc %p\n", (void *)*p);
    return 0;
}
CUresult cuMemFree_v2(unsigned long long p) { free((void *)p); return 0; }
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
    memcpy((void *)d, s, n);
    return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) {
    memcpy(d, (void *)s, n);
    return 0;
}
CUresult cuEventCreate(void **e, unsigned f) { *e = malloc(1); return 0; }
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0.5f; return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }

struct entry { const char *name; void *fn; };
static const struct entry TABLE[] = {
    {"cuLaunchKernel", (void *)cuLaunchKernel},
    {"cuLaunchKernel_ptsz", (void *)cuLaunchKernel_ptsz},
    {"cuModuleLoadData", (void *)cuModuleLoadData},
    {"cuModuleLoadDataEx", (void *)cuModuleLoadDataEx},
    {"cuModuleGetFunction", (void *)cuModuleGetFunction},
};
/* The driver's lookup: per-thread-stream variants with flag 2, from this library's own table. */
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags,
                             int *status) {
    char name[128];
    snprintf(name, sizeof name, "%s%s", sym,
             (flags & 2) && strcmp(sym, "cuLaunchKernel") == 0 ? "_ptsz" : "");
    *pfn = NULL;
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
        if (strcmp(TABLE[i].name, name) == 0) *pfn = TABLE[i].fn;
    if (status) *status = *pfn ? 0 : 1;
    return 0;
}
