/* A program that reaches the driver as the statically linked CUDA runtime does: dlopen
 * libcuda.so.1, dlsym cuGetProcAddress_v2, and every other entry point through it, the
 * per-thread-stream launch included. It loads a PTX module and launches kernel k three times:
 * plainly, on the per-thread stream, and with its parameter in an `extra` buffer. */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*GetProc)(const char *, void **, int, unsigned long long, int *);
typedef int (*Load)(void **, const void *);
typedef int (*GetFn)(void **, void *, const char *);
typedef int (*Launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, void *, void **, void **);

static const char PTX[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry k(\n\t.param .u32 k_n,\n\t.param .u64 k_p\n)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<3>;\n"
    "  ld.param.u32 %r1, [k_n];\n  ld.param.u64 %rd1, [k_p];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n  ld.global.u32 %r2, [%rd2];\n"
    "  add.s32 %r3, %r2, %r1;\n  st.global.u32 [%rd2], %r3;\n  ret;\n}\n";

int main(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) { fprintf(stderr, "no libcuda: %s\n", dlerror()); return 2; }
    GetProc gpa = (GetProc)dlsym(h, "cuGetProcAddress_v2");
    Load load; GetFn getf; Launch plain, ptsz;
    gpa("cuModuleLoadData", (void **)&load, 12000, 0, NULL);
    gpa("cuModuleGetFunction", (void **)&getf, 12000, 0, NULL);
    gpa("cuLaunchKernel", (void **)&plain, 12000, 0, NULL);
    gpa("cuLaunchKernel", (void **)&ptsz, 12000, 2, NULL);
    void *m, *f;
    if (load(&m, PTX) || getf(&f, m, "k")) return 3;
    int n = 5;
    unsigned buf[4] = {0};
    void *p = buf;
    void *args[] = {&n, &p};
    int status = plain(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
    status |= ptsz(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
    unsigned long long packed[2] = {(unsigned long long)n, (unsigned long long)p};
    size_t size = sizeof packed;
    void *extra[] = {(void *)1, packed, (void *)2, &size, NULL};
    status |= plain(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra);
    printf("app done %d\n", status);
    return 7;
}
