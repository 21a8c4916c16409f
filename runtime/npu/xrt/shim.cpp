//go:build xrt

// shim.cpp: the extern "C" functions of shim.h over XRT's C++ API
// (XRT >= 2.18). Built only with -tags xrt; see README.md.
//
// When XRT's headers are not found (xrt/xrt_hw_context.h, XRT >= 2.18),
// this file compiles to stubs that fail with a message saying so. That lets
// go vet -tags xrt, which compiles the package's C++ files, type-check the
// package on machines without XRT; go build -tags xrt still fails there, at
// the link (-lxrt_coreutil).
//
// The sequence is mlir-aie's host code (programming_examples/basic/
// matrix_multiplication/test.cpp; npu-stack.md 3.1): register_xclbin,
// hw_context(device, uuid), kernel(context, name), bo(device, size, flags,
// kernel.group_id(arg)), bo.map, bo.sync, run.set_arg/start, run.wait.

#include "shim.h"

#include <cstdio>

#if !__has_include("xrt/xrt_hw_context.h")

static int no_xrt(char *err) {
  std::snprintf(err, XDNA_XRT_ERRLEN,
                "built without XRT >= 2.18 headers (xrt/xrt_hw_context.h not found): "
                "install XRT and rebuild with -tags xrt");
  return -1;
}

extern "C" {
int xdna_xrt_open(unsigned, xdna_xrt **, char *err) { return no_xrt(err); }
void xdna_xrt_close(xdna_xrt *) {}
int xdna_xrt_load_kernel(xdna_xrt *, const void *, size_t, const char *, uint32_t *, char *err) {
  return no_xrt(err);
}
int xdna_xrt_alloc(xdna_xrt *, uint32_t, int, size_t, uint32_t *, void **, char *err) {
  return no_xrt(err);
}
int xdna_xrt_free(xdna_xrt *, uint32_t, char *err) { return no_xrt(err); }
int xdna_xrt_sync(xdna_xrt *, uint32_t, int, size_t, size_t, char *err) { return no_xrt(err); }
int xdna_xrt_run(xdna_xrt *, uint32_t, uint64_t, uint32_t, uint32_t, const uint32_t *, size_t,
                 uint64_t *, char *err) {
  return no_xrt(err);
}
int xdna_xrt_wait(xdna_xrt *, uint64_t, uint32_t, int *, int *, char *err) { return no_xrt(err); }
void xdna_xrt_release(xdna_xrt *, uint64_t) {}
}

#else

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"
#include "xrt/experimental/xrt_xclbin.h"

namespace {

struct context {
  xrt::xclbin xclbin;
  xrt::hw_context hw;
  xrt::kernel kernel;
};

int fail(char *err, const char *what, const char *msg) {
  std::snprintf(err, XDNA_XRT_ERRLEN, "%s: %s", what, msg);
  return -1;
}

// guard runs f, turning an exception into an error message.
template <typename F> int guard(char *err, const char *what, F f) {
  try {
    return f();
  } catch (const std::exception &e) {
    return fail(err, what, e.what());
  } catch (...) {
    return fail(err, what, "unknown exception");
  }
}

bool is_final(ert_cmd_state s) {
  switch (s) {
  case ERT_CMD_STATE_NEW:
  case ERT_CMD_STATE_QUEUED:
  case ERT_CMD_STATE_RUNNING:
  case ERT_CMD_STATE_SUBMITTED:
    return false;
  default:
    return true;
  }
}

} // namespace

struct xdna_xrt {
  xrt::device device;
  std::mutex mu; // guards the tables, not the XRT calls
  std::vector<std::unique_ptr<context>> kernels; // handle = index + 1
  std::map<uint32_t, xrt::bo> bos;
  uint32_t next_bo = 0;
  std::map<uint64_t, xrt::run> runs;
  uint64_t next_run = 0;
};

extern "C" {

int xdna_xrt_open(unsigned index, xdna_xrt **out, char *err) {
  return guard(err, "open device", [&] {
    auto d = std::make_unique<xdna_xrt>();
    d->device = xrt::device(index);
    *out = d.release();
    return 0;
  });
}

void xdna_xrt_close(xdna_xrt *d) {
  try {
    delete d; // runs, buffers, kernels, contexts, device: in reverse order
  } catch (...) {
  }
}

int xdna_xrt_load_kernel(xdna_xrt *d, const void *xclbin, size_t size, const char *name,
                         uint32_t *kernel, char *err) {
  return guard(err, "load kernel", [&] {
    const char *p = static_cast<const char *>(xclbin);
    auto c = std::make_unique<context>();
    c->xclbin = xrt::xclbin(std::vector<char>(p, p + size));
    d->device.register_xclbin(c->xclbin);
    c->hw = xrt::hw_context(d->device, c->xclbin.get_uuid());
    c->kernel = xrt::kernel(c->hw, name);
    std::lock_guard<std::mutex> l(d->mu);
    d->kernels.push_back(std::move(c));
    *kernel = static_cast<uint32_t>(d->kernels.size());
    return 0;
  });
}

int xdna_xrt_alloc(xdna_xrt *d, uint32_t kernel, int instr, size_t size, uint32_t *bo,
                   void **host, char *err) {
  return guard(err, "alloc", [&] {
    xrt::kernel k;
    {
      std::lock_guard<std::mutex> l(d->mu);
      if (kernel < 1 || kernel > d->kernels.size())
        return fail(err, "alloc", "bad kernel handle");
      k = d->kernels[kernel - 1]->kernel;
    }
    xrt::bo b = instr ? xrt::bo(d->device, size, XCL_BO_FLAGS_CACHEABLE, k.group_id(1))
                      : xrt::bo(d->device, size, XRT_BO_FLAGS_HOST_ONLY, k.group_id(3));
    void *m = b.map<void *>();
    std::lock_guard<std::mutex> l(d->mu);
    uint32_t h = ++d->next_bo;
    d->bos.emplace(h, std::move(b));
    *bo = h;
    *host = m;
    return 0;
  });
}

int xdna_xrt_free(xdna_xrt *d, uint32_t bo, char *err) {
  return guard(err, "free", [&] {
    std::lock_guard<std::mutex> l(d->mu);
    if (d->bos.erase(bo) == 0)
      return fail(err, "free", "bad buffer handle");
    return 0;
  });
}

int xdna_xrt_sync(xdna_xrt *d, uint32_t bo, int to_device, size_t offset, size_t size, char *err) {
  return guard(err, "sync", [&] {
    xrt::bo b;
    {
      std::lock_guard<std::mutex> l(d->mu);
      auto it = d->bos.find(bo);
      if (it == d->bos.end())
        return fail(err, "sync", "bad buffer handle");
      b = it->second;
    }
    b.sync(to_device ? XCL_BO_SYNC_BO_TO_DEVICE : XCL_BO_SYNC_BO_FROM_DEVICE, size, offset);
    return 0;
  });
}

int xdna_xrt_run(xdna_xrt *d, uint32_t kernel, uint64_t opcode, uint32_t instr, uint32_t words,
                 const uint32_t *data, size_t ndata, uint64_t *run, char *err) {
  return guard(err, "run", [&] {
    xrt::kernel k;
    xrt::bo ib;
    std::vector<xrt::bo> bos;
    {
      std::lock_guard<std::mutex> l(d->mu);
      if (kernel < 1 || kernel > d->kernels.size())
        return fail(err, "run", "bad kernel handle");
      k = d->kernels[kernel - 1]->kernel;
      auto it = d->bos.find(instr);
      if (it == d->bos.end())
        return fail(err, "run", "bad instruction buffer handle");
      ib = it->second;
      for (size_t i = 0; i < ndata; i++) {
        auto jt = d->bos.find(data[i]);
        if (jt == d->bos.end())
          return fail(err, "run", "bad data buffer handle");
        bos.push_back(jt->second);
      }
    }
    xrt::run r(k);
    r.set_arg(0, opcode);
    r.set_arg(1, ib);
    r.set_arg(2, words);
    for (size_t i = 0; i < bos.size(); i++)
      r.set_arg(static_cast<int>(3 + i), bos[i]);
    r.start();
    std::lock_guard<std::mutex> l(d->mu);
    uint64_t h = ++d->next_run;
    d->runs.emplace(h, std::move(r));
    *run = h;
    return 0;
  });
}

int xdna_xrt_wait(xdna_xrt *d, uint64_t run, uint32_t timeout_ms, int *state, int *final,
                  char *err) {
  return guard(err, "wait", [&] {
    xrt::run r;
    {
      std::lock_guard<std::mutex> l(d->mu);
      auto it = d->runs.find(run);
      if (it == d->runs.end())
        return fail(err, "wait", "bad run handle");
      r = it->second;
    }
    ert_cmd_state s = r.wait(std::chrono::milliseconds(timeout_ms < 1 ? 1 : timeout_ms));
    if (s == ERT_CMD_STATE_TIMEOUT && !is_final(r.state()))
      s = r.state(); // the wait timed out, not the command
    *state = static_cast<int>(s);
    *final = is_final(s) ? 1 : 0;
    return 0;
  });
}

void xdna_xrt_release(xdna_xrt *d, uint64_t run) {
  try {
    std::lock_guard<std::mutex> l(d->mu);
    d->runs.erase(run);
  } catch (...) {
  }
}

} // extern "C"

#endif // __has_include("xrt/xrt_hw_context.h")
