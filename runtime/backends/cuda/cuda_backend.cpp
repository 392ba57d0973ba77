// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_backend.cpp — owns the CUDA backend: tierpool::backend over the CUDA runtime API
// (static cudart, never the driver stub). Device discovery and the capability probe,
// allocation per memory kind (cudaMalloc / cudaHostAlloc or hwloc + cudaHostRegister /
// cudaMallocManaged / aligned or hwloc-bound host memory), streams, events, copies,
// managed prefetch and advice in their CUDA 13 cudaMemLocation forms, host functions.
// Entry points: make_cuda_backend(), cuda_device_count().
//
// Invariants:
//   every non-default stream_handle accepted by a member is in streams_;
//   every event_handle accepted by a member is in events_;
//   bound_pinned_ / bound_host_ hold exactly the live hwloc-allocated ranges (ptr -> bytes).
//
// Note [Pageable copies through pinned staging]
// cudaMemcpyAsync with pageable host memory on one side is not asynchronous: from pageable
// memory it first waits for the stream's earlier work (the pool's copy streams wait on
// user work: a victim's last use), into pageable memory it returns only after the copy.
// Either stalls the calling thread, which in the pool holds a tensor's lock. The backend
// reaches the host tier "through pinned staging buffers" (docs/chapters/backends.md): a copy between device (or
// managed) memory and pageable host memory is cut into chunks of one pinned buffer per
// stream (kStagingBytes, made on the stream's first such copy); each chunk is a host
// function (memcpy between the pageable range and the buffer: no CUDA call) and a DMA
// between the buffer and the device, in stream order, so the caller never waits. Reuse is
// safe because everything on one stream runs in order: a chunk's host function runs after
// the previous chunk's DMA. staging_mtx_ is held while one copy enqueues its chunks, so
// copies from two threads on one stream do not interleave theirs. A stream whose buffer
// cannot be made falls back to the plain (blocking) cudaMemcpyAsync. Each buffer has an
// event recorded after the last chunk of every staged copy: destroy_stream, forget_stream
// and the destructor wait for that event (the staged copies, not later work on the
// stream) before freeing the buffer, and never name the stream itself, which for an
// adopted stream may be gone already.
//
// Note [Staging from pageable memory on an idle stream]
// A staged copy out of pageable memory queues, per chunk, a host function (memcpy into the
// buffer) and the DMA after it. The DMA waits for the host function, and the driver runs
// host functions from its own thread: on an H200 (bench/results/gpu-2026-12-04/) a copy
// from pageable memory through the pool took 2.8-4.3 ms whatever its size up to 4 MiB,
// against 0.2-0.25 ms a MiB for the bytes themselves. When the stream has nothing queued
// (cudaStreamQuery: every earlier copy, and every wait the pool queued for the source's
// fill, is done), the source's bytes are ready and the buffer is idle, so the first chunk
// is copied into the buffer on the calling thread and only its DMA is queued; the chunks
// after it go as before. A stream being captured is never queried (that would invalidate
// the capture): its chunks go into the graph as host functions. Limitations: the caller
// spends that memcpy (up to the buffer's 8 MiB); copies into pageable memory keep their
// host function (its bytes exist only once the DMA is done).
//
// Note [Host copies run on the host]
// cudaMemcpyAsync between two host ranges, pinned or pageable, is synchronous with respect
// to the host (CUDA's "API synchronization behavior"): the caller, in the pool a thread
// holding a tensor's lock, would wait for the stream's earlier work. Every copy between
// two host-side kinds is a stream-ordered host function instead (a plain memcpy, no CUDA
// call): it runs after the stream's earlier work and before its later work, so an event
// recorded after copy_async completes once the bytes are there, as for any copy.
//
// Note [Host functions run one at a time]
// The host functions this backend queues (host copies, staging chunks) only copy bytes.
// None may wait for work of another stream: the driver may run the host functions of all
// streams on one thread, one at a time, so a host function waiting for another stream's
// work (perhaps a host function queued behind it) would deadlock, and only on CUDA. A
// host copy on one stream may also delay those of others behind it. The simulated device
// can run its host functions the same way (sim_options::serialize_host_functions).
//
// Note [Device guard]
// CUDA's current device (and context) is per host thread, and backend members may be
// called from any thread. Setting this backend's device with cudaSetDevice and restoring
// the caller's afterwards touches other devices: on a thread that never chose one,
// cudaGetDevice reports device 0 without creating anything, but restoring it with
// cudaSetDevice(0) creates device 0's primary context (CUDA 12+), hundreds of MB on a GPU
// a process using only GPU 1 never meant to use. So the backend never calls
// cudaSetDevice: it retains its device's primary context once (driver entry points found
// with cudaGetDriverEntryPointByVersion; libcuda is never linked) and every member pushes
// that context for its calls and pops it afterwards (device_guard). The runtime uses the
// context current on the thread, so the calls go to the backend's device, and the
// thread's context stack, its current device included, is what it was: no other device
// is touched. The primary context stays retained for the life of the process, as the
// runtime keeps its own.
#include "cuda_check.hpp"

#include <tierpool/backends/cuda_backend.hpp>
#include <tierpool/log.hpp>
#include <tierpool/topology.hpp>

#include <cuda.h>          // driver types (CUcontext, CUresult) only: nothing of libcuda is linked
#include <cudaTypedefs.h>  // PFN_* of the driver entry points (Note [Device guard])

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tierpool {
namespace {

namespace cu = detail::cuda;

// Alignment of pageable host allocations made without a NUMA node; matches cudaMalloc's
// 256-byte guarantee so that every kind honours caps().allocation_alignment.
constexpr std::size_t kHostAlignment = 256;

// The driver entry points the backend uses (Note [Device guard]), found once.
struct driver_api {
  PFN_cuInit_v2000 init{nullptr};
  PFN_cuDeviceGet_v2000 device_get{nullptr};
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain{nullptr};
  PFN_cuCtxPushCurrent_v4000 ctx_push{nullptr};
  PFN_cuCtxPopCurrent_v4000 ctx_pop{nullptr};
  PFN_cuGetErrorName_v6000 error_name{nullptr};  // optional: for messages
  std::string missing;  // why an entry point is missing; empty when all were found
};

// ABI version of the symbols asked for: the forms of CUDA 12.0 (cuCtxPushCurrent_v2, ...),
// which is what the PFN types above describe.
constexpr unsigned kDriverApiVersion = 12000;

driver_api const& driver() noexcept
{
  static driver_api const api = [] {
    driver_api a;
    auto find = [&a](char const* name, void** fn, bool required) {
      cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
      cudaError_t const e = cudaGetDriverEntryPointByVersion(name, fn, kDriverApiVersion, cudaEnableDefault, &found);
      if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || *fn == nullptr) {
        cu::clear_own_error(e);
        *fn = nullptr;
        if (required && a.missing.empty()) {
          try {
            a.missing = std::string("the driver has no entry point ") + name +
                        (e != cudaSuccess ? " (" + cu::describe(e) + ")" : std::string());
          } catch (...) {
            a.missing = "a driver entry point is missing";
          }
        }
      }
    };
    find("cuInit", reinterpret_cast<void**>(&a.init), true);
    find("cuDeviceGet", reinterpret_cast<void**>(&a.device_get), true);
    find("cuDevicePrimaryCtxRetain", reinterpret_cast<void**>(&a.primary_ctx_retain), true);
    find("cuCtxPushCurrent", reinterpret_cast<void**>(&a.ctx_push), true);
    find("cuCtxPopCurrent", reinterpret_cast<void**>(&a.ctx_pop), true);
    find("cuGetErrorName", reinterpret_cast<void**>(&a.error_name), false);
    return a;
  }();
  return api;
}

std::string describe_driver_error(CUresult r)
{
  char const* name = nullptr;
  if (driver().error_name != nullptr && driver().error_name(r, &name) == CUDA_SUCCESS && name != nullptr) {
    return std::string(name);
  }
  return "CUresult " + std::to_string(static_cast<int>(r));
}

// The primary context of `device`, retained on first use and kept for the life of the
// process (Note [Device guard]); null with a reason on failure.
CUcontext primary_context(int device, std::string* why)
{
  static std::mutex mtx;                               // guards `retained`
  static std::unordered_map<int, CUcontext> retained;  // device -> its primary context
  std::lock_guard const lock(mtx);
  if (auto const it = retained.find(device); it != retained.end()) { return it->second; }
  driver_api const& d = driver();
  if (!d.missing.empty()) {
    *why = "CUDA device " + std::to_string(device) + ": " + d.missing;
    return nullptr;
  }
  char const* step = "cuInit";
  CUresult r = d.init(0);
  CUdevice dev{};
  if (r == CUDA_SUCCESS) {
    step = "cuDeviceGet";
    r = d.device_get(&dev, device);
  }
  CUcontext ctx = nullptr;
  if (r == CUDA_SUCCESS) {
    step = "cuDevicePrimaryCtxRetain";
    r = d.primary_ctx_retain(&ctx, dev);
  }
  if (r != CUDA_SUCCESS || ctx == nullptr) {
    *why = "CUDA device " + std::to_string(device) + ": " + step + " failed (" + describe_driver_error(r) + ")";
    return nullptr;
  }
  retained.emplace(device, ctx);
  return ctx;
}

// See Note [Device guard]: makes `ctx` current for the guard's life, then the caller's
// context stack is as before.
class device_guard {
 public:
  explicit device_guard(CUcontext ctx) noexcept
  {
    CUresult const r = driver().ctx_push(ctx);
    if (r == CUDA_SUCCESS) {
      pushed_ = true;
    } else {
      // The runtime's error codes are the driver's for the context errors (201 invalid
      // context, 709 destroyed, 4 deinitialized), so the value describes itself.
      error_ = static_cast<cudaError_t>(r);
    }
  }
  device_guard(device_guard const&) = delete;
  device_guard& operator=(device_guard const&) = delete;
  ~device_guard()
  {
    if (pushed_) {
      CUcontext popped = nullptr;
      (void)driver().ctx_pop(&popped);
    }
  }
  [[nodiscard]] cudaError_t error() const noexcept { return error_; }

 private:
  cudaError_t error_{cudaSuccess};
  bool pushed_{false};
};

// The most recent failure on this thread, tagged with the backend that recorded it. Owners
// are ids, not addresses: a new backend may reuse a destroyed one's address, and the
// destructor can clear only its own thread's slot.
struct last_error_slot {
  std::uint64_t owner{0};
  std::string text;
};
thread_local last_error_slot tl_last_error;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
std::atomic<std::uint64_t> next_backend_id{1};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

bool valid_kind(tier_kind k) noexcept { return static_cast<std::size_t>(k) < tier_kind_count; }

std::string reason_for_init_failure(cudaError_t e)
{
  if (e == cudaErrorInsufficientDriver) { return "no CUDA driver (" + cu::describe(e) + ")"; }
  if (e == cudaErrorNoDevice) { return "no CUDA device (" + cu::describe(e) + ")"; }
  return "CUDA initialization failed (" + cu::describe(e) + ")";
}

// A stream-ordered memcpy between two host-side ranges, run by cudaLaunchHostFunc.
struct host_copy {
  void* dst;
  void const* src;
  std::size_t bytes;
};

void run_host_copy(void* user) noexcept
{
  // Runs on a CUDA-internal thread: must not call CUDA, nor wait for anything (Note [Host
  // functions run one at a time]).
  std::unique_ptr<host_copy> const c(static_cast<host_copy*>(user));
  std::memcpy(c->dst, c->src, c->bytes);
}

// Note [Copy timing]
// A diagnostic for a GPU: with TIERPOOL_CUDA_COPY_TIMING=FILE, every copy_async is bracketed
// by two timing events on its stream, and the backend's destructor writes one JSON line per
// copy to FILE: {"stream", "src", "dst", "bytes", "start_us", "end_us"}, the device times
// relative to the first copy's start. Where copies sit on the device's timeline (how long
// each takes, how busy each stream is, what waits between them) is what no host-side figure
// says; bench/gpu/demo_profile.sh reads it. Off (no event, no lock) without the variable; at
// most kCopyTimingMax copies are kept. A failure to make or record an event drops that
// copy's timing, never the copy; a file that cannot be written is a logged warning.
constexpr std::size_t kCopyTimingMax = 1U << 20U;

class copy_timer {
 public:
  copy_timer()
  {
    if (char const* f = std::getenv("TIERPOOL_CUDA_COPY_TIMING"); f != nullptr && *f != '\0') { path_ = f; }
  }
  copy_timer(copy_timer const&) = delete;
  copy_timer& operator=(copy_timer const&) = delete;
  ~copy_timer() { flush(); }

  struct probe {
    copy_timer* timer{nullptr};
    cudaStream_t stream{nullptr};
    cudaEvent_t start{nullptr};
    std::size_t bytes{0};
    tier_kind src{};
    tier_kind dst{};
    probe() = default;
    probe(probe const&) = delete;
    probe& operator=(probe const&) = delete;
    ~probe()
    {
      if (timer != nullptr) { timer->end(*this); }
    }
  };

  /// Records the start event of a copy on `cs` into `p` (nothing when timing is off).
  void begin(probe& p, cudaStream_t cs, copy_desc const& d) noexcept
  {
    if (path_.empty()) { return; }
    cudaEvent_t e = nullptr;
    if (cudaError_t const r = cudaEventCreate(&e); r != cudaSuccess) {
      cu::clear_own_error(r);
      return;
    }
    if (cudaError_t const r = cudaEventRecord(e, cs); r != cudaSuccess) {
      cu::clear_own_error(r);
      (void)cudaEventDestroy(e);
      return;
    }
    p.timer = this;
    p.stream = cs;
    p.start = e;
    p.bytes = d.bytes;
    p.src = d.src_kind;
    p.dst = d.dst_kind;
  }

  /// Writes the copies recorded so far to the file and forgets them (the backend's
  /// destructor calls it while its context is current).
  void flush() noexcept
  {
    std::lock_guard const lock(mtx_);
    if (copies_.empty()) { return; }
    try {
      std::ofstream out(path_, std::ios::trunc);
      if (!out) {
        log_message(log_level::warning, "tierpool: TIERPOOL_CUDA_COPY_TIMING: cannot write '" + path_ + "': " +
                                          std::to_string(copies_.size()) + " copies' timing dropped");
      }
      std::unordered_map<cudaStream_t, std::size_t> ids;
      cudaEvent_t const anchor = copies_.front().start;
      (void)cudaEventSynchronize(anchor);
      for (timed const& c : copies_) {
        (void)cudaEventSynchronize(c.end);
        float a = 0.0F;
        float b = 0.0F;
        cudaError_t r = cudaEventElapsedTime(&a, anchor, c.start);
        if (r == cudaSuccess) { r = cudaEventElapsedTime(&b, anchor, c.end); }
        if (r != cudaSuccess) {
          cu::clear_own_error(r);
          continue;
        }
        std::size_t const id = ids.try_emplace(c.stream, ids.size()).first->second;
        out << "{\"stream\": " << id << ", \"src\": \"" << to_string(c.src) << "\", \"dst\": \"" << to_string(c.dst)
            << "\", \"bytes\": " << c.bytes << ", \"start_us\": " << 1e3 * static_cast<double>(a)
            << ", \"end_us\": " << 1e3 * static_cast<double>(b) << "}\n";
      }
    } catch (...) {
    }
    for (timed const& c : copies_) {
      (void)cudaEventDestroy(c.start);
      (void)cudaEventDestroy(c.end);
    }
    copies_.clear();
  }

 private:
  friend struct probe;
  struct timed {
    cudaStream_t stream;
    cudaEvent_t start;
    cudaEvent_t end;
    std::size_t bytes;
    tier_kind src;
    tier_kind dst;
  };

  void end(probe const& p) noexcept
  {
    cudaEvent_t e = nullptr;
    cudaError_t r = cudaEventCreate(&e);
    if (r == cudaSuccess) { r = cudaEventRecord(e, p.stream); }
    std::lock_guard const lock(mtx_);
    if (r != cudaSuccess || copies_.size() >= kCopyTimingMax) {
      cu::clear_own_error(r);
      (void)cudaEventDestroy(p.start);
      if (e != nullptr) { (void)cudaEventDestroy(e); }
      return;
    }
    try {
      copies_.push_back({p.stream, p.start, e, p.bytes, p.src, p.dst});
    } catch (...) {
      (void)cudaEventDestroy(p.start);
      (void)cudaEventDestroy(e);
    }
  }

  std::string path_;
  std::mutex mtx_;
  std::vector<timed> copies_;
};

// Pinned staging per stream (Note [Pageable copies through pinned staging]).
constexpr std::size_t kStagingBytes = std::size_t{8} << 20U;

class cuda_backend final : public backend {
 public:
  static std::unique_ptr<backend> create(int device, std::string* why_not);

  cuda_backend(cuda_backend const&) = delete;
  cuda_backend& operator=(cuda_backend const&) = delete;
  ~cuda_backend() override;

  [[nodiscard]] backend_caps const& caps() const noexcept override { return caps_; }
  [[nodiscard]] status allocate(tier_kind kind, std::size_t bytes, void** out, int numa_node) noexcept override;
  void deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept override;
  [[nodiscard]] status device_memory_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept override;
  [[nodiscard]] status create_stream(stream_handle* out, int priority) noexcept override;
  void destroy_stream(stream_handle s) noexcept override;
  [[nodiscard]] status synchronize_stream(stream_handle s) noexcept override;
  [[nodiscard]] status adopt_stream(void* native, stream_handle* out) noexcept override;
  void forget_stream(stream_handle s) noexcept override;
  [[nodiscard]] status create_event(event_handle* out) noexcept override;
  [[nodiscard]] status create_timed_event(event_handle* out) noexcept override;
  [[nodiscard]] status event_elapsed(event_handle from, event_handle to, tick* ns) noexcept override;
  void destroy_event(event_handle e) noexcept override;
  [[nodiscard]] status record_event(event_handle e, stream_handle s) noexcept override;
  [[nodiscard]] status query_event(event_handle e) noexcept override;
  [[nodiscard]] status synchronize_event(event_handle e) noexcept override;
  [[nodiscard]] status stream_wait_event(stream_handle s, event_handle e) noexcept override;
  [[nodiscard]] status copy_async(copy_desc const& d, stream_handle s) noexcept override;
  [[nodiscard]] status prefetch_async(void* ptr, std::size_t bytes, memory_location to,
                                      stream_handle s) noexcept override;
  [[nodiscard]] status advise(void* ptr, std::size_t bytes, mem_advice advice,
                              memory_location where) noexcept override;
  [[nodiscard]] status launch_host_func(stream_handle s, host_fn fn, void* user_data) noexcept override;
  [[nodiscard]] tick now() const noexcept override;
  [[nodiscard]] status is_capturing(stream_handle s, bool* out) const noexcept override;
  [[nodiscard]] bool capture_underway() const noexcept override;
  [[nodiscard]] std::string last_error() const override;

 private:
  /// create_event (timed false: cudaEventDisableTiming) and create_timed_event.
  [[nodiscard]] status make_event(event_handle* out, bool timed) noexcept;
  cuda_backend(int device, CUcontext ctx) noexcept : device_(device), ctx_(ctx) {}

  // Probe capabilities and create the default stream; "" on success, else the reason.
  std::string initialize();

  // Record a failure for last_error() and return its status.
  status fail(cudaError_t e, char const* expr) const noexcept;
  status fail(status s, char const* what) const noexcept;
  void record(std::string text) const noexcept;

  [[nodiscard]] bool resolve(stream_handle s, cudaStream_t* out) const noexcept;
  [[nodiscard]] bool resolve(event_handle e, cudaEvent_t* out) const noexcept;

  status allocate_bound(tier_kind kind, std::size_t bytes, void** out, unsigned node) noexcept;
  // A copy between device / managed memory and pageable host memory, in chunks through
  // `cs`'s staging buffer; nullopt when the buffer cannot be made (the caller copies plainly).
  std::optional<status> copy_staged(copy_desc const& d, cudaStream_t cs) noexcept;
  // Free `cs`'s staging buffer, if it has one, once its staged copies are done.
  void drop_staging(cudaStream_t cs) noexcept;
  // A stream's pinned staging buffer and the event recorded after its last staged copy.
  struct staging_buffer {
    void* buffer{nullptr};
    cudaEvent_t done{nullptr};
  };
  // Wait for the staged copies of `st` (its event: never the stream) and free it.
  static void free_staging(staging_buffer const& st) noexcept;
  std::optional<std::size_t> take_bound(std::unordered_map<void*, std::size_t>& map, void* p) noexcept;

  std::uint64_t const id_{next_backend_id.fetch_add(1, std::memory_order_relaxed)};
  int device_;
  CUcontext ctx_;  // the device's primary context (Note [Device guard])
  backend_caps caps_{};
  int least_priority_{0};     // numerically largest (lowest-priority) stream priority
  int greatest_priority_{0};  // numerically smallest (highest-priority) stream priority
  cudaStream_t default_stream_{nullptr};
  std::optional<topology> topology_;  // for NUMA binding; absent when discovery failed

  mutable std::shared_mutex handles_mtx_;
  std::unordered_set<cudaStream_t> streams_;  // every stream a call accepts (ours and adopted)
  std::unordered_set<cudaStream_t> adopted_;  // the caller's (adopt_stream): never synchronized nor destroyed here
  std::unordered_set<cudaEvent_t> events_;

  std::mutex staging_mtx_;                                     // also held while one copy enqueues its chunks
  std::unordered_map<cudaStream_t, staging_buffer> staging_;  // stream -> pinned buffer of kStagingBytes

  std::mutex bound_mtx_;
  std::unordered_map<void*, std::size_t> bound_pinned_;  // hwloc + cudaHostRegister
  std::unordered_map<void*, std::size_t> bound_host_;    // hwloc only

  copy_timer timer_;  // Note [Copy timing]: off unless TIERPOOL_CUDA_COPY_TIMING names a file
};

std::unique_ptr<backend> cuda_backend::create(int device, std::string* why_not)
{
  auto set_reason = [&](std::string r) {
    if (why_not != nullptr) { *why_not = std::move(r); }
  };
  std::string reason;
  int const count = cuda_device_count(&reason);
  if (count == 0) {
    set_reason(std::move(reason));
    return nullptr;
  }
  if (device < 0 || device >= count) {
    set_reason("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
               " device(s) visible)");
    return nullptr;
  }
  CUcontext const ctx = primary_context(device, &reason);
  if (ctx == nullptr) {
    set_reason(std::move(reason));
    return nullptr;
  }
  std::unique_ptr<cuda_backend> b(new cuda_backend(device, ctx));
  reason = b->initialize();
  if (!reason.empty()) {
    set_reason(std::move(reason));
    return nullptr;
  }
  return b;
}

std::string cuda_backend::initialize()
{
  auto failed = [this](char const* what, cudaError_t e) {
    cu::clear_own_error(e);
    return "CUDA device " + std::to_string(device_) + ": " + what + " failed (" + cu::describe(e) + ")";
  };
  device_guard const guard(ctx_);
  if (guard.error() != cudaSuccess) { return failed("cuCtxPushCurrent (the primary context)", guard.error()); }

  cudaDeviceProp prop{};
  if (auto e = cudaGetDeviceProperties(&prop, device_); e != cudaSuccess) {
    return failed("cudaGetDeviceProperties", e);
  }
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  if (auto e = cudaMemGetInfo(&free_bytes, &total_bytes); e != cudaSuccess) { return failed("cudaMemGetInfo", e); }

  auto attribute = [this](cudaDeviceAttr a, int fallback) {
    int v = 0;
    if (cudaError_t const e = cudaDeviceGetAttribute(&v, a, device_); e != cudaSuccess) {
      cu::clear_own_error(e);  // an attribute this driver does not know: use the fallback
      return fallback;
    }
    return v;
  };

  caps_.name = "cuda";
  caps_.device_name = std::string(prop.name, ::strnlen(prop.name, sizeof(prop.name)));
  caps_.device_ordinal = device_;
  caps_.compute_capability_major = attribute(cudaDevAttrComputeCapabilityMajor, prop.major);
  caps_.compute_capability_minor = attribute(cudaDevAttrComputeCapabilityMinor, prop.minor);
  caps_.device_bytes = total_bytes;
  caps_.pinned_host_bytes = 0;  // bounded only by the host
  caps_.has_managed = attribute(cudaDevAttrManagedMemory, 0) != 0;
  caps_.concurrent_managed_access = attribute(cudaDevAttrConcurrentManagedAccess, 0) != 0;
  // cudaMemPrefetchAsync / cudaMemAdvise with a location need concurrent managed access.
  caps_.has_managed_prefetch = caps_.has_managed && caps_.concurrent_managed_access;
  // docs/chapters/tiers.md: managed memory is always bounded, on a real GPU by the free device memory.
  caps_.managed_bytes = caps_.has_managed ? free_bytes : 0;
  caps_.managed_shares_device = true;  // the pool sizes a default managed tier beside its device tiers
  caps_.allocation_alignment = 256;  // cudaMalloc guarantees 256; host kinds are aligned to match
  caps_.copy_granularity = 256;
  caps_.real_memory = true;
  caps_.virtual_clock = false;
  caps_.timed_events = true;  // cudaEventElapsedTime
  caps_.max_copy_streams = 16;
  caps_.host_numa_node = attribute(cudaDevAttrHostNumaId, -1);
  // What a result bundle names the machine by (tierpool info, the suite's fingerprint);
  // none of these is needed to run, so a failure leaves the field empty.
  if (cudaError_t const e = cudaDriverGetVersion(&caps_.driver_version); e != cudaSuccess) {
    cu::clear_own_error(e);
    caps_.driver_version = 0;
  }
  if (cudaError_t const e = cudaRuntimeGetVersion(&caps_.runtime_version); e != cudaSuccess) {
    cu::clear_own_error(e);
    caps_.runtime_version = 0;
  }
  std::array<char, 32> bus{};
  if (cudaError_t const e = cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), device_); e == cudaSuccess) {
    caps_.pci_bus_id.assign(bus.data(), ::strnlen(bus.data(), bus.size()));
    for (char& ch : caps_.pci_bus_id) { ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); }
    // sysfs's form: a 4-digit domain ("0000:5d:00.0"; NVML's form has 8).
    if (std::size_t const colon = caps_.pci_bus_id.find(':'); colon == 8 && caps_.pci_bus_id.starts_with("0000")) {
      caps_.pci_bus_id.erase(0, 4);
    }
  } else {
    cu::clear_own_error(e);
  }

  if (auto e = cudaDeviceGetStreamPriorityRange(&least_priority_, &greatest_priority_); e != cudaSuccess) {
    return failed("cudaDeviceGetStreamPriorityRange", e);
  }
  if (auto e = cudaStreamCreateWithFlags(&default_stream_, cudaStreamNonBlocking); e != cudaSuccess) {
    return failed("cudaStreamCreateWithFlags", e);
  }

  try {
    topology_.emplace(topology::discover());
  } catch (std::exception const&) {
    topology_.reset();  // no NUMA binding; everything else works
  }
  caps_.has_numa_binding = topology_.has_value();
  return {};
}

cuda_backend::~cuda_backend()
{
  device_guard const guard(ctx_);
  std::unique_lock const lock(handles_mtx_);
  // Drain every stream first: work still queued (a copy into hwloc-bound pages, a host
  // function copying pageable memory) must not outlive the memory freed below.
  // Adopted streams are the caller's (it may have destroyed them already): neither
  // synchronized nor named; their staging buffers wait for their own staged copies only
  // (Note [Pageable copies through pinned staging]).
  for (cudaStream_t s : streams_) {
    if (!adopted_.contains(s)) { (void)cudaStreamSynchronize(s); }
  }
  if (default_stream_ != nullptr) { (void)cudaStreamSynchronize(default_stream_); }
  timer_.flush();  // while the context is current (Note [Copy timing])
  {
    std::lock_guard const staging_lock(staging_mtx_);
    for (auto const& [stream, st] : staging_) { free_staging(st); }
    staging_.clear();
  }
  for (cudaEvent_t e : events_) { (void)cudaEventDestroy(e); }
  for (cudaStream_t s : streams_) {
    if (!adopted_.contains(s)) { (void)cudaStreamDestroy(s); }
  }
  if (default_stream_ != nullptr) { (void)cudaStreamDestroy(default_stream_); }
  // hwloc-bound ranges still live cannot be freed once topology_ is gone: free them now.
  // (cudaMalloc'd memory left behind is released with the primary context.)
  if (topology_) {
    std::lock_guard const bound_lock(bound_mtx_);
    for (auto const& [p, bytes] : bound_pinned_) {
      (void)cudaHostUnregister(p);
      topology_->deallocate_on_node(p, bytes);
    }
    for (auto const& [p, bytes] : bound_host_) { topology_->deallocate_on_node(p, bytes); }
  }
  if (tl_last_error.owner == id_) { tl_last_error = {}; }
}

void cuda_backend::record(std::string text) const noexcept
{
  try {
    tl_last_error.owner = id_;
    tl_last_error.text = std::move(text);
  } catch (...) {
    // Out of memory while describing an error: keep the previous text.
  }
}

status cuda_backend::fail(cudaError_t e, char const* expr) const noexcept
{
  status const s = cu::to_status(e);
  try {
    record(std::string(expr) + " failed: " + cu::describe(e));
  } catch (...) {
  }
  cu::clear_own_error(e);
  return s;
}

status cuda_backend::fail(status s, char const* what) const noexcept
{
  try {
    record(std::string(what));
  } catch (...) {
  }
  return s;
}

std::string cuda_backend::last_error() const
{
  return tl_last_error.owner == id_ ? tl_last_error.text : std::string{};
}

bool cuda_backend::resolve(stream_handle s, cudaStream_t* out) const noexcept
{
  if (s.is_default()) {
    *out = default_stream_;
    return true;
  }
  auto* const cs = reinterpret_cast<cudaStream_t>(s.value);
  std::shared_lock const lock(handles_mtx_);
  if (!streams_.contains(cs)) { return false; }
  *out = cs;
  return true;
}

bool cuda_backend::resolve(event_handle e, cudaEvent_t* out) const noexcept
{
  auto* const ce = reinterpret_cast<cudaEvent_t>(e.value);
  std::shared_lock const lock(handles_mtx_);
  if (ce == nullptr || !events_.contains(ce)) { return false; }
  *out = ce;
  return true;
}

status cuda_backend::allocate(tier_kind kind, std::size_t bytes, void** out, int numa_node) noexcept
{
  if (out == nullptr) { return fail(status::invalid_value, "allocate: out is null"); }
  *out = nullptr;
  if (!valid_kind(kind)) { return fail(status::invalid_value, "allocate: unknown tier kind"); }
  if (bytes == 0) { return fail(status::invalid_value, "allocate: bytes must be > 0"); }
  if (numa_node < -1) { return fail(status::invalid_value, "allocate: numa_node must be >= -1"); }
  if (numa_node >= 0 && cu::is_host_side(kind)) {
    return allocate_bound(kind, bytes, out, static_cast<unsigned>(numa_node));
  }
  switch (kind) {
    case tier_kind::device: {
      device_guard const guard(ctx_);
      TIERPOOL_CUDA_TRY(guard.error());
      TIERPOOL_CUDA_TRY(cudaMalloc(out, bytes));
      return status::ok;
    }
    case tier_kind::pinned_host: {
      device_guard const guard(ctx_);
      TIERPOOL_CUDA_TRY(guard.error());
      TIERPOOL_CUDA_TRY(cudaHostAlloc(out, bytes, cudaHostAllocPortable));
      return status::ok;
    }
    case tier_kind::managed: {
      if (!caps_.has_managed) { return fail(status::not_supported, "allocate: device has no managed memory"); }
      device_guard const guard(ctx_);
      TIERPOOL_CUDA_TRY(guard.error());
      TIERPOOL_CUDA_TRY(cudaMallocManaged(out, bytes, cudaMemAttachGlobal));
      return status::ok;
    }
    case tier_kind::host: {
      void* p = ::operator new(bytes, std::align_val_t{kHostAlignment}, std::nothrow);
      if (p == nullptr) { return fail(status::out_of_memory, "allocate: host memory exhausted"); }
      *out = p;
      return status::ok;
    }
    case tier_kind::storage:  // the pool's storage file gives a storage tier its ranges
      return fail(status::not_supported, "allocate: storage is not device memory (the pool's storage file holds it)");
  }
  return fail(status::invalid_value, "allocate: unknown tier kind");
}

status cuda_backend::allocate_bound(tier_kind kind, std::size_t bytes, void** out, unsigned node) noexcept
{
  if (!topology_) { return fail(status::not_supported, "allocate: no hwloc topology, cannot bind to a NUMA node"); }
  if (topology_->find_node(node) == nullptr) {
    return fail(status::invalid_value, "allocate: no such NUMA node in the topology");
  }
  void* p = topology_->allocate_on_node(bytes, node);
  if (p == nullptr) { return fail(status::out_of_memory, "allocate: hwloc_alloc_membind failed"); }
  if (kind == tier_kind::pinned_host) {
    device_guard const guard(ctx_);
    cudaError_t e = guard.error();
    if (e == cudaSuccess) { e = cudaHostRegister(p, bytes, cudaHostRegisterPortable); }
    if (e != cudaSuccess) {
      topology_->deallocate_on_node(p, bytes);
      return fail(e, "cudaHostRegister(hwloc-bound pages)");
    }
  }
  try {
    std::lock_guard const lock(bound_mtx_);
    (kind == tier_kind::pinned_host ? bound_pinned_ : bound_host_).emplace(p, bytes);
  } catch (...) {
    if (kind == tier_kind::pinned_host) { (void)cudaHostUnregister(p); }
    topology_->deallocate_on_node(p, bytes);
    return fail(status::out_of_memory, "allocate: bookkeeping allocation failed");
  }
  *out = p;
  return status::ok;
}

std::optional<std::size_t> cuda_backend::take_bound(std::unordered_map<void*, std::size_t>& map, void* p) noexcept
{
  std::lock_guard const lock(bound_mtx_);
  auto const it = map.find(p);
  if (it == map.end()) { return std::nullopt; }
  std::size_t const bytes = it->second;
  map.erase(it);
  return bytes;
}

void cuda_backend::deallocate(tier_kind kind, void* ptr, std::size_t /*bytes*/) noexcept
{
  if (ptr == nullptr) { return; }
  device_guard const guard(ctx_);
  cudaError_t e = cudaSuccess;
  switch (kind) {
    case tier_kind::device:
    case tier_kind::managed: e = cudaFree(ptr); break;
    case tier_kind::pinned_host:
      if (auto const bound = take_bound(bound_pinned_, ptr)) {
        e = cudaHostUnregister(ptr);
        topology_->deallocate_on_node(ptr, *bound);
      } else {
        e = cudaFreeHost(ptr);
      }
      break;
    case tier_kind::host:
      if (auto const bound = take_bound(bound_host_, ptr)) {
        topology_->deallocate_on_node(ptr, *bound);
      } else {
        ::operator delete(ptr, std::align_val_t{kHostAlignment});
      }
      break;
    case tier_kind::storage: break;  // never allocated here
  }
  cu::clear_own_error(e);
}

status cuda_backend::device_memory_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept
{
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return fail(status::invalid_value, "device_memory_info: null out-pointer");
  }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes));
  return status::ok;
}

status cuda_backend::create_stream(stream_handle* out, int priority) noexcept
{
  if (out == nullptr) { return fail(status::invalid_value, "create_stream: out is null"); }
  *out = {};
  // CUDA: lower numbers run first; greatest_priority_ <= least_priority_.
  int const p = std::clamp(priority, greatest_priority_, least_priority_);
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  cudaStream_t s = nullptr;
  TIERPOOL_CUDA_TRY(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, p));
  try {
    std::unique_lock const lock(handles_mtx_);
    streams_.insert(s);
  } catch (...) {
    (void)cudaStreamDestroy(s);
    return fail(status::out_of_memory, "create_stream: bookkeeping allocation failed");
  }
  out->value = reinterpret_cast<std::uintptr_t>(s);
  return status::ok;
}

void cuda_backend::destroy_stream(stream_handle s) noexcept
{
  if (s.is_default()) { return; }
  auto* const cs = reinterpret_cast<cudaStream_t>(s.value);
  bool adopted = false;
  {
    std::unique_lock const lock(handles_mtx_);
    if (streams_.erase(cs) == 0) { return; }  // not ours: ignore
    adopted = adopted_.erase(cs) != 0;
  }
  drop_staging(cs);
  if (adopted) { return; }  // the caller's: forgotten, not destroyed
  device_guard const guard(ctx_);
  (void)cudaStreamDestroy(cs);  // returns at once; released after its queued work
}

void cuda_backend::drop_staging(cudaStream_t cs) noexcept
{
  staging_buffer st;
  {
    std::lock_guard const lock(staging_mtx_);
    auto const it = staging_.find(cs);
    if (it == staging_.end()) { return; }
    st = it->second;
    staging_.erase(it);
  }
  device_guard const guard(ctx_);
  free_staging(st);
}

void cuda_backend::free_staging(staging_buffer const& st) noexcept
{
  // The event follows the last chunk of the stream's last staged copy: once it completes
  // nothing uses the buffer. Waiting for it never names the stream (it may be the
  // caller's, destroyed already) nor waits for work queued there after the copies.
  cudaError_t e = cudaEventSynchronize(st.done);
  cu::clear_own_error(e);
  e = cudaFreeHost(st.buffer);
  cu::clear_own_error(e);
  e = cudaEventDestroy(st.done);
  cu::clear_own_error(e);
}

status cuda_backend::adopt_stream(void* native, stream_handle* out) noexcept
{
  if (out == nullptr) { return fail(status::invalid_value, "adopt_stream: out is null"); }
  *out = {};
  if (native == nullptr) { return fail(status::invalid_value, "adopt_stream: null stream"); }
  auto* const cs = static_cast<cudaStream_t>(native);
  // What can be told without a CUDA call: the special handles, and handles of this
  // backend. Anything else must be a live cudaStream_t (the precondition): CUDA itself
  // cannot tell a destroyed or made-up handle from a live one without undefined behaviour,
  // so no call here can check that (cudaStreamGetDevice, cudaStreamQuery, ... all
  // dereference it).
  if (cs == cudaStreamLegacy || cs == cudaStreamPerThread) {
    return fail(status::invalid_value,
                "adopt_stream: cudaStreamLegacy and cudaStreamPerThread are no streams of their own (one synchronizes "
                "with every blocking stream, the other is a different stream on each thread); make one with "
                "cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)");
  }
  {
    std::shared_lock const lock(handles_mtx_);
    if (events_.contains(reinterpret_cast<cudaEvent_t>(cs))) {
      return fail(status::invalid_value, "adopt_stream: that is an event of this backend, not a stream");
    }
    if (cs == default_stream_) { return fail(status::invalid_value, "adopt_stream: a stream this backend created"); }
  }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  int dev = -1;
  if (cudaError_t const e = cudaStreamGetDevice(cs, &dev); e != cudaSuccess) {
    cu::clear_own_error(e);
    return fail(status::invalid_value, "adopt_stream: not a live CUDA stream");
  }
  if (dev != device_) {
    try {
      record("adopt_stream: a stream of CUDA device " + std::to_string(dev) + ", not of this backend's device " +
             std::to_string(device_));
    } catch (...) {
    }
    return status::invalid_value;
  }
  try {
    std::unique_lock const lock(handles_mtx_);
    bool const ours = streams_.contains(cs) && !adopted_.contains(cs);
    if (ours) { return fail(status::invalid_value, "adopt_stream: a stream this backend created"); }
    streams_.insert(cs);
    adopted_.insert(cs);
  } catch (...) {
    return fail(status::out_of_memory, "adopt_stream: bookkeeping allocation failed");
  }
  out->value = reinterpret_cast<std::uintptr_t>(cs);
  return status::ok;
}

void cuda_backend::forget_stream(stream_handle s) noexcept
{
  auto* const cs = reinterpret_cast<cudaStream_t>(s.value);
  bool forgotten = false;
  {
    std::unique_lock const lock(handles_mtx_);
    forgotten = adopted_.erase(cs) != 0;
    if (forgotten) { streams_.erase(cs); }
  }
  if (forgotten) { drop_staging(cs); }
}

status cuda_backend::synchronize_stream(stream_handle s) noexcept
{
  cudaStream_t cs = nullptr;
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "synchronize_stream: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaStreamSynchronize(cs));
  return status::ok;
}

status cuda_backend::create_event(event_handle* out) noexcept { return make_event(out, false); }

status cuda_backend::create_timed_event(event_handle* out) noexcept { return make_event(out, true); }

status cuda_backend::event_elapsed(event_handle from, event_handle to, tick* ns) noexcept
{
  if (ns == nullptr) { return fail(status::invalid_value, "event_elapsed: ns is null"); }
  *ns = 0;
  cudaEvent_t a = nullptr;
  cudaEvent_t b = nullptr;
  if (!resolve(from, &a) || !resolve(to, &b)) { return fail(status::invalid_value, "event_elapsed: unknown event"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  float ms = 0.0F;
  cudaError_t const r = cudaEventElapsedTime(&ms, a, b);
  if (r == cudaErrorNotReady) {
    cu::clear_own_error(r);  // as in query_event: not a failure the program should see later
    return status::not_ready;
  }
  TIERPOOL_CUDA_TRY(r);  // cudaErrorInvalidResourceHandle: an event made without timing
  *ns = ms > 0.0F ? static_cast<tick>(static_cast<double>(ms) * 1e6) : 0;
  return status::ok;
}

status cuda_backend::make_event(event_handle* out, bool timed) noexcept
{
  if (out == nullptr) { return fail(status::invalid_value, "create_event: out is null"); }
  *out = {};
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  cudaEvent_t e = nullptr;
  TIERPOOL_CUDA_TRY(cudaEventCreateWithFlags(&e, timed ? cudaEventDefault : cudaEventDisableTiming));
  try {
    std::unique_lock const lock(handles_mtx_);
    events_.insert(e);
  } catch (...) {
    (void)cudaEventDestroy(e);
    return fail(status::out_of_memory, "create_event: bookkeeping allocation failed");
  }
  out->value = reinterpret_cast<std::uintptr_t>(e);
  return status::ok;
}

void cuda_backend::destroy_event(event_handle e) noexcept
{
  auto* const ce = reinterpret_cast<cudaEvent_t>(e.value);
  if (ce == nullptr) { return; }
  {
    std::unique_lock const lock(handles_mtx_);
    if (events_.erase(ce) == 0) { return; }
  }
  device_guard const guard(ctx_);
  (void)cudaEventDestroy(ce);  // a pending record still completes; resources freed then
}

status cuda_backend::record_event(event_handle e, stream_handle s) noexcept
{
  cudaEvent_t ce = nullptr;
  cudaStream_t cs = nullptr;
  if (!resolve(e, &ce)) { return fail(status::invalid_value, "record_event: unknown event"); }
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "record_event: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaEventRecord(ce, cs));
  return status::ok;
}

status cuda_backend::query_event(event_handle e) noexcept
{
  cudaEvent_t ce = nullptr;
  if (!resolve(e, &ce)) { return fail(status::invalid_value, "query_event: unknown event"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  cudaError_t const r = cudaEventQuery(ce);  // success also for a never-recorded event
  if (r == cudaErrorNotReady) {
    // Not a failure, but the runtime may keep it as the thread's last error, where the
    // next cudaGetLastError() after a kernel launch in user code would report it.
    cu::clear_own_error(r);
    return status::not_ready;
  }
  TIERPOOL_CUDA_TRY(r);
  return status::ok;
}

status cuda_backend::synchronize_event(event_handle e) noexcept
{
  cudaEvent_t ce = nullptr;
  if (!resolve(e, &ce)) { return fail(status::invalid_value, "synchronize_event: unknown event"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaEventSynchronize(ce));
  return status::ok;
}

status cuda_backend::stream_wait_event(stream_handle s, event_handle e) noexcept
{
  cudaEvent_t ce = nullptr;
  cudaStream_t cs = nullptr;
  if (!resolve(e, &ce)) { return fail(status::invalid_value, "stream_wait_event: unknown event"); }
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "stream_wait_event: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaStreamWaitEvent(cs, ce, cudaEventWaitDefault));
  return status::ok;
}

status cuda_backend::copy_async(copy_desc const& d, stream_handle s) noexcept
{
  if (d.dst == nullptr || d.src == nullptr) { return fail(status::invalid_value, "copy_async: null pointer"); }
  if (d.bytes == 0) { return fail(status::invalid_value, "copy_async: bytes must be > 0"); }
  if (!valid_kind(d.dst_kind) || !valid_kind(d.src_kind)) {
    return fail(status::invalid_value, "copy_async: unknown tier kind");
  }
  if (is_storage(d.dst_kind) || is_storage(d.src_kind)) {  // file I/O: the pool's storage file does it
    return fail(status::not_supported, "copy_async: storage copies are file I/O, not device copies");
  }
  auto const dst = reinterpret_cast<std::uintptr_t>(d.dst);
  auto const src = reinterpret_cast<std::uintptr_t>(d.src);
  if (dst < src + d.bytes && src < dst + d.bytes) {
    return fail(status::invalid_value, "copy_async: source and destination overlap");
  }
  cudaStream_t cs = nullptr;
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "copy_async: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  copy_timer::probe probe;  // records the copy's end event when it goes (Note [Copy timing])
  timer_.begin(probe, cs, d);

  // Host <-> host, pinned or pageable: cudaMemcpyAsync would copy on the calling thread; a
  // host function keeps the copy asynchronous and in stream order (Note [Host copies run
  // on the host]).
  if (cu::copy_runs_on_host(d.dst_kind, d.src_kind)) {
    auto* const job = new (std::nothrow) host_copy{d.dst, d.src, d.bytes};
    if (job == nullptr) { return fail(status::out_of_memory, "copy_async: host copy descriptor"); }
    cudaError_t const e = cudaLaunchHostFunc(cs, run_host_copy, job);
    if (e != cudaSuccess) {
      delete job;
      return fail(e, "cudaLaunchHostFunc(host copy)");
    }
    return status::ok;
  }
  if (cu::copy_needs_staging(d.dst_kind, d.src_kind)) {
    if (std::optional<status> const r = copy_staged(d, cs)) { return *r; }
  }
  // Unified addressing: cudaMemcpyDefault infers the direction from the pointers.
  TIERPOOL_CUDA_TRY(cudaMemcpyAsync(d.dst, d.src, d.bytes, cudaMemcpyDefault, cs));
  return status::ok;
}

std::optional<status> cuda_backend::copy_staged(copy_desc const& d, cudaStream_t cs) noexcept
{
  std::lock_guard const lock(staging_mtx_);  // this copy's chunks enqueue without interleaving
  staging_buffer st;
  if (auto const it = staging_.find(cs); it != staging_.end()) {
    st = it->second;
  } else {
    if (cudaError_t const e = cudaHostAlloc(&st.buffer, kStagingBytes, cudaHostAllocPortable); e != cudaSuccess) {
      cu::clear_own_error(e);
      return std::nullopt;  // no pinned memory to spare: the plain, blocking copy
    }
    if (cudaError_t const e = cudaEventCreateWithFlags(&st.done, cudaEventDisableTiming); e != cudaSuccess) {
      cu::clear_own_error(e);
      (void)cudaFreeHost(st.buffer);
      return std::nullopt;
    }
    try {
      staging_.emplace(cs, st);
    } catch (...) {
      (void)cudaEventDestroy(st.done);
      (void)cudaFreeHost(st.buffer);
      return std::nullopt;
    }
  }
  void* const stage = st.buffer;
  bool const into_host = d.dst_kind == tier_kind::host;  // else out of the pageable source
  auto* const dst = static_cast<std::byte*>(d.dst);
  auto const* const src = static_cast<std::byte const*>(d.src);
  // Note [Staging from pageable memory on an idle stream]: the first chunk is copied here.
  std::size_t first = 0;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (!into_host && cudaStreamIsCapturing(cs, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusNone) {
    cudaError_t const q = cudaStreamQuery(cs);  // never on a capturing stream: it would end the capture
    if (q == cudaSuccess) {
      first = std::min(kStagingBytes, d.bytes);
      std::memcpy(stage, src, first);
      if (cudaError_t const e = cudaMemcpyAsync(dst, stage, first, cudaMemcpyDefault, cs); e != cudaSuccess) {
        return fail(e, "copy_async: a staged chunk");  // nothing of this copy was queued
      }
    } else {
      cu::clear_own_error(q);  // cudaErrorNotReady: work ahead; the chunk goes through a host function
    }
  }
  for (std::size_t off = first; off < d.bytes; off += kStagingBytes) {
    std::size_t const n = std::min(kStagingBytes, d.bytes - off);
    auto* const job = new (std::nothrow) host_copy{into_host ? static_cast<void*>(dst + off) : stage,
                                                  into_host ? static_cast<void const*>(stage) : src + off, n};
    cudaError_t e = job == nullptr ? cudaErrorMemoryAllocation : cudaSuccess;
    if (e == cudaSuccess && into_host) { e = cudaMemcpyAsync(stage, src + off, n, cudaMemcpyDefault, cs); }
    if (e == cudaSuccess) {
      e = cudaLaunchHostFunc(cs, run_host_copy, job);
      if (e != cudaSuccess) { delete job; }
    } else {
      delete job;
    }
    if (e == cudaSuccess && !into_host) { e = cudaMemcpyAsync(dst + off, stage, n, cudaMemcpyDefault, cs); }
    if (e != cudaSuccess) {
      // Chunks already queued still write the destination: let them finish, so that the
      // caller may reuse it at once.
      status const failed = fail(e, "copy_async: a staged chunk");
      cu::clear_own_error(cudaStreamSynchronize(cs));
      return failed;
    }
  }
  // The buffer's event follows this copy's last chunk (free_staging waits for it). If it
  // cannot be recorded, wait for the chunks here: the previous record would be too early.
  if (cudaError_t const e = cudaEventRecord(st.done, cs); e != cudaSuccess) {
    cu::clear_own_error(e);
    cu::clear_own_error(cudaStreamSynchronize(cs));
  }
  return status::ok;
}

status cuda_backend::prefetch_async(void* ptr, std::size_t bytes, memory_location to, stream_handle s) noexcept
{
  if (!caps_.has_managed_prefetch) {
    return fail(status::not_supported, "prefetch_async: device lacks concurrent managed access");
  }
  if (ptr == nullptr || bytes == 0) { return fail(status::invalid_value, "prefetch_async: empty range"); }
  if (!valid_kind(to.kind)) { return fail(status::invalid_value, "prefetch_async: unknown destination kind"); }
  cudaStream_t cs = nullptr;
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "prefetch_async: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, cu::location_for(to, device_), 0, cs));
  return status::ok;
}

status cuda_backend::advise(void* ptr, std::size_t bytes, mem_advice advice, memory_location where) noexcept
{
  if (!caps_.has_managed) { return fail(status::not_supported, "advise: device has no managed memory"); }
  if (ptr == nullptr || bytes == 0) { return fail(status::invalid_value, "advise: empty range"); }
  cudaMemoryAdvise a = cudaMemAdviseSetReadMostly;
  if (!cu::to_cuda_advice(advice, &a) || !valid_kind(where.kind)) {
    return fail(status::invalid_value, "advise: unknown advice or location kind");
  }
  // Accessed-by takes a device or the host as a whole, never a host NUMA node.
  cudaMemLocation const loc = cu::location_for(where, device_, !cu::is_accessed_by(advice));
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaMemAdvise(ptr, bytes, a, loc));
  return status::ok;
}

status cuda_backend::launch_host_func(stream_handle s, host_fn fn, void* user_data) noexcept
{
  if (fn == nullptr) { return fail(status::invalid_value, "launch_host_func: fn is null"); }
  cudaStream_t cs = nullptr;
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "launch_host_func: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  TIERPOOL_CUDA_TRY(cudaLaunchHostFunc(cs, fn, user_data));
  return status::ok;
}

tick cuda_backend::now() const noexcept
{
  auto const ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
    std::chrono::steady_clock::now().time_since_epoch());
  return static_cast<tick>(ns.count());
}

status cuda_backend::is_capturing(stream_handle s, bool* out) const noexcept
{
  if (out == nullptr) { return fail(status::invalid_value, "is_capturing: out is null"); }
  *out = false;
  cudaStream_t cs = nullptr;
  if (!resolve(s, &cs)) { return fail(status::invalid_value, "is_capturing: unknown stream"); }
  device_guard const guard(ctx_);
  TIERPOOL_CUDA_TRY(guard.error());
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  TIERPOOL_CUDA_TRY(cudaStreamIsCapturing(cs, &st));  // legal during a capture
  *out = st != cudaStreamCaptureStatusNone;           // active, or invalidated and not ended yet
  return status::ok;
}

bool cuda_backend::capture_underway() const noexcept
{
  device_guard const guard(ctx_);
  if (guard.error() != cudaSuccess) { return false; }
  auto capturing = [](cudaStream_t cs) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t const e = cudaStreamIsCapturing(cs, &st);
    cu::clear_own_error(e);
    return e == cudaSuccess && st != cudaStreamCaptureStatusNone;
  };
  if (default_stream_ != nullptr && capturing(default_stream_)) { return true; }
  std::shared_lock const lock(handles_mtx_);
  return std::any_of(streams_.begin(), streams_.end(), capturing);
}

}  // namespace

int cuda_device_count(std::string* why_not)
{
  int count = 0;
  cudaError_t const e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cu::clear_own_error(e);
    if (why_not != nullptr) { *why_not = reason_for_init_failure(e); }
    return 0;
  }
  if (count == 0 && why_not != nullptr) { *why_not = "no CUDA device (cudaGetDeviceCount found none)"; }
  return count;
}

std::unique_ptr<backend> make_cuda_backend(int device, std::string* why_not)
{
  return cuda_backend::create(device, why_not);
}

}  // namespace tierpool
