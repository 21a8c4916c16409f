/*
 * shim.h: the C interface of shim.cpp, a thin extern "C" layer over XRT's
 * C++ API (xrt::device, xrt::xclbin, xrt::hw_context, xrt::kernel, xrt::bo,
 * xrt::run). Plain C with no XRT include, so that cgo (and go vet) can read
 * it on machines without XRT.
 *
 * Every function returns 0 on success, or -1 with a message of at most
 * XDNA_XRT_ERRLEN bytes (NUL included) in err. Handles are small integers,
 * never pointers into Go memory: kernels and buffers from 1, runs from 1.
 */
#ifndef XDNA_XRT_SHIM_H
#define XDNA_XRT_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { XDNA_XRT_ERRLEN = 512 };

/* One opened xrt::device and everything created on it. */
typedef struct xdna_xrt xdna_xrt;

int xdna_xrt_open(unsigned index, xdna_xrt **out, char *err);
void xdna_xrt_close(xdna_xrt *d);

/* register_xclbin, hw_context(device, uuid), kernel(context, name). */
int xdna_xrt_load_kernel(xdna_xrt *d, const void *xclbin, size_t size, const char *name,
                         uint32_t *kernel, char *err);

/* instr != 0: XCL_BO_FLAGS_CACHEABLE in group_id(1); else
 * XRT_BO_FLAGS_HOST_ONLY in group_id(3). *host is the bo's mapping. */
int xdna_xrt_alloc(xdna_xrt *d, uint32_t kernel, int instr, size_t size, uint32_t *bo,
                   void **host, char *err);
int xdna_xrt_free(xdna_xrt *d, uint32_t bo, char *err);
int xdna_xrt_sync(xdna_xrt *d, uint32_t bo, int to_device, size_t offset, size_t size, char *err);

/* Starts the kernel with (opcode, instr bo, words, data bos...). */
int xdna_xrt_run(xdna_xrt *d, uint32_t kernel, uint64_t opcode, uint32_t instr, uint32_t words,
                 const uint32_t *data, size_t ndata, uint64_t *run, char *err);

/* Waits up to timeout_ms (>= 1). *state is the ERT command state;
 * *final is 0 if the command had not finished when the wait returned. */
int xdna_xrt_wait(xdna_xrt *d, uint64_t run, uint32_t timeout_ms, int *state, int *final,
                  char *err);
void xdna_xrt_release(xdna_xrt *d, uint64_t run);

#ifdef __cplusplus
}
#endif

#endif
