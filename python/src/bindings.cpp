// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// tierpool._tierpool: the nanobind bindings behind the Python package `tierpool`
// (python/tierpool/__init__.py re-exports them; docs/chapters/python.md).
//
// Lifetimes: a Tensor and a Lease keep their Pool alive (keep_alive), and a Lease keeps
// its Tensor alive. A zero-copy view of a lease (buffer protocol, DLPack) keeps the Lease
// alive and is counted in Lease::exports; release() while a view exists raises
// BufferError instead of leaving the view dangling.

#include <Python.h>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/codec.hpp>
#include <tierpool/monitor.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/trace_gen.hpp>
#include <tierpool/version.hpp>

#include "py_policy.hpp"
#include "torch_allocator.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// ---- option parsing ----

tierpool::tier_kind parse_tier_kind(std::string const& s)
{
  if (s == "device") { return tierpool::tier_kind::device; }
  if (s == "pinned_host") { return tierpool::tier_kind::pinned_host; }
  if (s == "managed") { return tierpool::tier_kind::managed; }
  if (s == "host") { return tierpool::tier_kind::host; }
  if (s == "storage") { return tierpool::tier_kind::storage; }
  throw tierpool::logic_error("unknown tier kind '" + s + "' (known: device, pinned_host, managed, host, storage)");
}

// {"path": "/mnt/nvme", "engine": "io_uring", ...}: a storage tier's options (tier_options::storage).
tierpool::storage_options storage_from_dict(nb::dict d)
{
  tierpool::storage_options o;
  for (auto [k, v] : d) {
    std::string const key = nb::cast<std::string>(k);
    if (key == "path") {
      o.path = nb::cast<std::string>(nb::str(v));  // a str or an os.PathLike's str()
    } else if (key == "engine") {
      std::string const e = nb::cast<std::string>(v);
      if (e == "automatic") {
        o.engine = tierpool::storage_engine::automatic;
      } else if (e == "pread") {
        o.engine = tierpool::storage_engine::pread;
      } else if (e == "io_uring") {
        o.engine = tierpool::storage_engine::io_uring;
      } else if (e == "compressed") {
        o.engine = tierpool::storage_engine::compressed;
      } else {
        throw tierpool::logic_error("unknown storage engine '" + e + "' (known: automatic, pread, io_uring, compressed)");
      }
    } else if (key == "direct") {
      std::string const e = nb::isinstance<nb::bool_>(v) ? (nb::cast<bool>(v) ? "on" : "off") : nb::cast<std::string>(v);
      if (e == "automatic") {
        o.direct = tierpool::storage_direct::automatic;
      } else if (e == "on") {
        o.direct = tierpool::storage_direct::on;
      } else if (e == "off") {
        o.direct = tierpool::storage_direct::off;
      } else {
        throw tierpool::logic_error("unknown storage direct mode '" + e + "' (known: automatic, on, off, True, False)");
      }
    } else if (key == "piece_bytes") {
      o.piece_bytes = nb::cast<std::size_t>(v);
    } else if (key == "queue_depth") {
      o.queue_depth = nb::cast<std::uint32_t>(v);
    } else if (key == "verify_writes") {
      o.verify_writes = nb::cast<bool>(v);
    } else if (key == "preallocate") {
      o.preallocate = nb::cast<bool>(v);
    } else if (key == "codec") {
      o.codec = tierpool::parse_codec_kind(nb::cast<std::string>(v));
    } else if (key == "memory_bytes") {
      o.memory_bytes = nb::cast<std::size_t>(v);
    } else {
      throw tierpool::logic_error("unknown storage option '" + key +
                                  "' (known: path, engine, direct, piece_bytes, queue_depth, verify_writes, preallocate, "
                                  "codec, memory_bytes)");
    }
  }
  return o;
}

nb::dict storage_dict(tierpool::storage_options const& o)
{
  nb::dict d;
  d["path"] = o.path;
  d["engine"] = o.engine == tierpool::storage_engine::pread      ? "pread"
                : o.engine == tierpool::storage_engine::io_uring   ? "io_uring"
                : o.engine == tierpool::storage_engine::compressed ? "compressed"
                                                                    : "automatic";  // the words storage_from_dict reads
  d["direct"] = o.direct == tierpool::storage_direct::on ? "on" : o.direct == tierpool::storage_direct::off ? "off" : "automatic";
  d["piece_bytes"] = o.piece_bytes;
  d["queue_depth"] = o.queue_depth;
  d["verify_writes"] = o.verify_writes;
  d["preallocate"] = o.preallocate;
  d["codec"] = std::string(tierpool::to_string(o.codec));
  d["memory_bytes"] = o.memory_bytes;
  return d;
}

// {"recompute": False, "h2d_bytes_per_s": 25e9, ...}: the eviction actions (pool_options::actions).
tierpool::action_options actions_from_dict(nb::dict d)
{
  tierpool::action_options a;
  for (auto [k, v] : d) {
    std::string const key = nb::cast<std::string>(k);
    if (key == "recompute") {
      a.recompute = nb::cast<bool>(v);
    } else if (key == "by_cost") {
      a.by_cost = nb::cast<bool>(v);
    } else if (key == "h2d_bytes_per_s") {
      a.h2d_bytes_per_s = nb::cast<double>(v);
    } else if (key == "d2h_bytes_per_s") {
      a.d2h_bytes_per_s = nb::cast<double>(v);
    } else if (key == "storage_write_bytes_per_s") {
      a.storage_write_bytes_per_s = nb::cast<double>(v);
    } else if (key == "storage_read_bytes_per_s") {
      a.storage_read_bytes_per_s = nb::cast<double>(v);
    } else {
      throw tierpool::logic_error("unknown action option '" + key +
                                  "' (known: recompute, by_cost, h2d_bytes_per_s, d2h_bytes_per_s, "
                                  "storage_write_bytes_per_s, storage_read_bytes_per_s)");
    }
  }
  return a;
}

tierpool::access_mode parse_access(std::string const& s)
{
  if (s == "read") { return tierpool::access_mode::read; }
  if (s == "read_write") { return tierpool::access_mode::read_write; }
  if (s == "write_discard") { return tierpool::access_mode::write_discard; }
  throw tierpool::logic_error("unknown access '" + s + "' (known: read, read_write, write_discard)");
}

char const* access_name(tierpool::access_mode a)
{
  switch (a) {
    case tierpool::access_mode::read: return "read";
    case tierpool::access_mode::read_write: return "read_write";
    case tierpool::access_mode::write_discard: return "write_discard";
  }
  return "read";
}

tierpool::tier_options tier_from_dict(nb::dict d, tierpool::python::policy_host& host)
{
  tierpool::tier_options t;
  for (auto [k, v] : d) {
    std::string const key = nb::cast<std::string>(k);
    if (key == "kind") {
      t.kind = parse_tier_kind(nb::cast<std::string>(v));
    } else if (key == "capacity_bytes") {
      t.capacity_bytes = nb::cast<std::size_t>(v);
    } else if (key == "chunk_bytes") {
      t.chunk_bytes = nb::cast<std::size_t>(v);
    } else if (key == "policy") {
      t.policy = host.resolve(v, false);  // a spec, or a Python policy class
    } else if (key == "name") {
      t.name = nb::cast<std::string>(v);
    } else if (key == "numa_node") {
      t.numa_node = nb::cast<int>(v);
    } else if (key == "storage") {
      t.storage = storage_from_dict(nb::cast<nb::dict>(v));
    } else {
      throw tierpool::logic_error("unknown tier option '" + key +
                                  "' (known: kind, capacity_bytes, chunk_bytes, policy, name, numa_node, storage)");
    }
  }
  return t;
}

// {"kind": "copy", "nth": 3} or {"kind": "any", "probability": 0.01}: one sim fault rule.
tierpool::sim_fault_rule fault_from_dict(nb::dict d)
{
  tierpool::sim_fault_rule r;
  for (auto [k, v] : d) {
    std::string const key = nb::cast<std::string>(k);
    if (key == "kind") {
      std::string const kind = nb::cast<std::string>(v);
      bool found = false;
      for (std::size_t i = 0; i <= tierpool::sim_call_count; ++i) {
        auto const c = static_cast<tierpool::sim_call>(i);
        if (tierpool::to_string(c) == kind) {
          r.kind = c;
          found = true;
        }
      }
      if (!found) {
        throw tierpool::logic_error("unknown sim fault kind '" + kind +
                                    "' (known: allocate, copy, event, stream_create, prefetch, host_func, compute, any)");
      }
    } else if (key == "nth") {
      r.nth = nb::cast<std::uint64_t>(v);
    } else if (key == "probability") {
      r.probability = nb::cast<double>(v);
    } else {
      throw tierpool::logic_error("unknown sim fault option '" + key + "' (known: kind, nth, probability)");
    }
  }
  return r;
}

// ---- the wrapped objects ----

struct py_pool;

struct py_tensor {
  tierpool::pool* pool{nullptr};  // kept alive by keep_alive
  py_pool* owner{nullptr};        // the same pool's wrapper
  tierpool::tensor handle;
  std::string name;

  py_tensor() = default;
  py_tensor(py_tensor&&) noexcept = default;
  py_tensor& operator=(py_tensor&&) noexcept = default;
  // Freeing takes the tier's lock, under which a Python policy's hooks take the GIL: free
  // without it (Note [Python policies and the GIL] in py_policy.hpp).
  ~py_tensor()
  {
    if (handle.valid() && PyGILState_Check() != 0) {
      nb::gil_scoped_release unlocked;
      handle = tierpool::tensor{};
    }
  }
  void free()
  {
    nb::gil_scoped_release unlocked;
    pool->free(handle);
  }
};

// Note [A view defers its lease's release]
// ----------------------------------------
// Rationale: a numpy array or torch tensor made from a lease points into the lease's
// bytes. Python code drops the lease (a `with` block ends) long before the garbage
// collector drops such a view, and a view over released bytes would read whatever the
// pool put there next. Refusing release() while views live (what this file first did)
// made `with pool.acquire(t) as l: a = np.from_dlpack(l)` raise at the end of the block.
// Approach: every view counts in py_lease::exports (buffer protocol, numpy(), DLPack).
// release() with views alive only marks the lease `release_pending`; the last view's
// death releases it. Until then the tensor stays pinned, so the pool keeps a table of
// the leases Python views hold (py_pool::view_pins): summary() and stats() list them,
// an OutOfMemory says how many bytes they hold, and close() names them.
// Limitations: a view kept in a reference cycle pins its tensor until the cycle
// collector runs (gc.collect()). All of this state changes only with the GIL held.
struct py_lease {
  tierpool::lease handle;
  py_pool* owner{nullptr};  // kept alive by keep_alive (a lease keeps its pool)
  std::string name;         // the tensor's name
  bool host{false};         // acquire_host
  bool real_memory{true};   // the backend has bytes (not phantom)
  bool cuda{false};         // the backend is CUDA
  int device{0};
  std::size_t exports{0};        // live zero-copy views
  bool release_pending{false};   // release() was asked while views lived

  py_lease() = default;
  py_lease(py_lease&&) noexcept = default;
  py_lease& operator=(py_lease&&) noexcept = default;
  ~py_lease() { release_now(); }  // (as py_tensor: without the GIL)
  // Unpinning takes the tier's lock: release without the GIL (as py_tensor).
  void release_now() noexcept
  {
    if (!handle.active()) { return; }
    if (PyGILState_Check() != 0) {
      nb::gil_scoped_release unlocked;
      handle.release();
    } else {
      handle.release();
    }
  }

  void check_viewable() const
  {
    if (release_pending) {
      throw nb::buffer_error(("the lease was released (its bytes stay pinned until its " + std::to_string(exports) +
                              " view(s) are gone): no new view")
                                 .c_str());
    }
    if (!handle.active()) { throw nb::buffer_error("the lease was released: its bytes are no longer reachable"); }
    if (!real_memory) {
      throw nb::buffer_error("the backend has phantom memory (sim memory='phantom'): a lease has no bytes to view");
    }
  }
  void add_export();
  void drop_export() noexcept;
  // End the lease now, or when its last view dies (Note [A view defers its lease's release]).
  void release()
  {
    if (exports != 0) {
      release_pending = true;
      return;
    }
    release_now();
  }
  // Bytes in host memory that the CPU reads at once: wait for the copies the lease's
  // stream was ordered after (a device lease on the simulated device).
  void wait_for_host_bytes() const;
};

// Note [Python callables the pool calls]
// --------------------------------------
// Rationale: a low-memory callback runs on the requesting thread inside acquire (which
// let go of the GIL), and a function given to enqueue_host on a backend worker thread;
// both must take the GIL to call Python, and the C++ side must never copy or drop a
// Python reference without it (std::function copies its target).
// Approach: the C++ side holds the Python function through py_callable, one owned
// reference that takes the GIL to call it and to drop it, whichever thread that is:
// enqueue_host moves one into the pool; a low-memory callback shares one (the pool's
// std::function is copyable), so a callback removed while another thread is inside it
// stays alive until that call returns. An exception the Python function
// raises leaves it as nb::python_error (whose copies and destruction take the GIL
// themselves): out of the request for a low-memory callback, at the next synchronize of
// the stream for enqueue_host, where it reaches Python as the original exception.
// Limitations: a callable must not block waiting for another Python thread that waits on
// the pool with the GIL held (no binding does: they all let go of it while waiting).
struct py_callable {
  PyObject* fn{nullptr};  // owned
  explicit py_callable(nb::handle f) : fn(f.inc_ref().ptr()) {}
  py_callable(py_callable&& o) noexcept : fn(std::exchange(o.fn, nullptr)) {}
  py_callable(py_callable const&) = delete;
  py_callable& operator=(py_callable const&) = delete;
  py_callable& operator=(py_callable&&) = delete;
  ~py_callable()
  {
    if (fn != nullptr && Py_IsInitialized() != 0) {
      nb::gil_scoped_acquire held;
      Py_DECREF(fn);
    }
  }
  template <class... Args>
  void operator()(Args&&... args)
  {
    nb::gil_scoped_acquire held;
    if (fn == nullptr) { throw tierpool::logic_error("the pool was closed: its Python functions were let go"); }
    nb::handle const callable{fn};
    callable(std::forward<Args>(args)...);
  }
  /// Let go of the function now (GIL held): a pool that closes breaks the reference
  /// cycles its recipes' functions make (they often refer to the pool).
  void drop() noexcept
  {
    PyObject* const f = std::exchange(fn, nullptr);
    Py_XDECREF(f);
  }
};

// A lease that Python views hold (py_pool::view_pins).
struct view_pin {
  std::uint64_t tensor{0};
  std::string name;
  std::size_t bytes{0};
  bool host{false};
};

struct py_pool {
  // Declared first, destroyed last: the pool's Python policies report here.
  std::shared_ptr<tierpool::python::policy_host> policies;
  tierpool::pool pool;
  std::map<py_lease const*, view_pin> view_pins;  // changed with the GIL held
  // The recipes' Python functions (Pool.set_recompute), let go of when the pool closes:
  // a function that refers to the pool (a closure, a global) would keep it alive for
  // ever, a cycle through C++ the garbage collector cannot see. Changed with the GIL held.
  std::vector<std::weak_ptr<py_callable>> recipe_fns;
  py_pool(std::shared_ptr<tierpool::python::policy_host> h, tierpool::pool_options o)
    : policies(std::move(h)), pool(std::move(o))
  {
  }
  py_pool(py_pool const&) = delete;
  py_pool& operator=(py_pool const&) = delete;
  ~py_pool()
  {
    // Closing calls the policies' hooks (they take the GIL): close without it.
    if (PyGILState_Check() != 0) {
      nb::gil_scoped_release unlocked;
      try {
        pool.close();
      } catch (...) {  // NOLINT(bugprone-empty-catch): leases live: the pool's destructor copes
      }
    }
  }
  /// Raise a Python policy's recorded failure (tierpool.PolicyError), once. GIL held.
  void check() const { policies->check(); }
  /// After close (GIL held): no recipe runs any more; drop their Python functions.
  void drop_recipe_fns() noexcept
  {
    for (auto const& w : recipe_fns) {
      if (auto f = w.lock()) { f->drop(); }
    }
    recipe_fns.clear();
  }
  void note_recipe_fn(std::shared_ptr<py_callable> const& f)
  {
    std::erase_if(recipe_fns, [](std::weak_ptr<py_callable> const& w) { return w.expired(); });
    recipe_fns.push_back(f);
  }

  [[nodiscard]] std::size_t view_bytes() const noexcept
  {
    std::size_t n = 0;
    for (auto const& [l, v] : view_pins) { n += v.bytes; }
    return n;
  }
  // "2 lease(s), 8388608 bytes: 'a' (tensor 3, 4194304 bytes, device lease), ..." or "".
  [[nodiscard]] std::string describe_view_pins() const
  {
    if (view_pins.empty()) { return {}; }
    std::string s = std::to_string(view_pins.size()) + " lease(s), " + std::to_string(view_bytes()) + " bytes: ";
    bool first = true;
    for (auto const& [l, v] : view_pins) {
      if (!first) { s += ", "; }
      first = false;
      s += "'" + v.name + "' (tensor " + std::to_string(v.tensor) + ", " + std::to_string(v.bytes) + " bytes, " +
           (v.host ? "host" : "device") + " lease, " + std::to_string(l->exports) + " view(s)" +
           (l->release_pending ? ", released" : "") + ")";
    }
    return s;
  }
};

void py_lease::add_export()
{
  if (exports++ == 0 && owner != nullptr) {
    owner->view_pins[this] = view_pin{static_cast<std::uint64_t>(handle.id()), name, handle.bytes(), host};
  }
}

void py_lease::drop_export() noexcept
{
  if (exports == 0) { return; }
  if (--exports != 0) { return; }
  if (owner != nullptr) { owner->view_pins.erase(this); }
  if (release_pending) {
    release_pending = false;
    release_now();
  }
}

void py_lease::wait_for_host_bytes() const
{
  if (host || cuda || owner == nullptr || !handle.active()) { return; }
  tierpool::stream_handle const s = handle.stream();
  nb::gil_scoped_release unlocked;
  tierpool::event e = owner->pool.create_event();
  e.record(s);
  e.synchronize();
}

// Buffer protocol of Lease: the bytes as a flat uint8 buffer, writable unless read access.
int lease_getbuffer(PyObject* self, Py_buffer* view, int flags)
{
  py_lease* l = nb::inst_ptr<py_lease>(self);
  try {
    l->check_viewable();
    if (!l->host && l->cuda) { throw nb::buffer_error("a device lease on the CUDA backend is not host memory: use DLPack"); }
    l->wait_for_host_bytes();
  } catch (nb::builtin_exception const& e) {
    view->obj = nullptr;
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  } catch (std::exception const& e) {
    view->obj = nullptr;
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
  bool const readonly = l->handle.access() == tierpool::access_mode::read;
  if (PyBuffer_FillInfo(view, self, l->handle.data(), static_cast<Py_ssize_t>(l->handle.bytes()), readonly ? 1 : 0,
                        flags) != 0) {
    return -1;
  }
  l->add_export();
  return 0;
}

void lease_releasebuffer(PyObject* self, Py_buffer*) { nb::inst_ptr<py_lease>(self)->drop_export(); }

PyType_Slot lease_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(lease_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(lease_releasebuffer)},
    {0, nullptr},
};

using byte_array = nb::ndarray<nb::array_api, std::uint8_t, nb::ndim<1>>;

// A 1-D uint8 ndarray over the lease's bytes whose owner keeps the lease alive and counted.
template <class Array = byte_array>
Array lease_array(nb::handle self)
{
  py_lease* l = nb::inst_ptr<py_lease>(self);
  l->check_viewable();
  l->wait_for_host_bytes();
  self.inc_ref();
  l->add_export();
  nb::capsule owner(self.ptr(), [](void* p) noexcept {
    PyObject* obj = static_cast<PyObject*>(p);
    nb::inst_ptr<py_lease>(obj)->drop_export();
    Py_DECREF(obj);
  });
  std::size_t const shape[1] = {l->handle.bytes()};
  int const dev_type = (!l->host && l->cuda) ? nb::device::cuda::value : nb::device::cpu::value;
  int const dev_id = (!l->host && l->cuda) ? l->device : 0;
  return Array(l->handle.data(), 1, shape, owner, nullptr, nb::dtype<std::uint8_t>(), dev_type, dev_id);
}

// Note [A recipe's buffers live for one call]
// -------------------------------------------
// Rationale: a recompute function (Pool.set_recompute) is handed the tensor's bytes and
// its inputs' bytes through leases the pool takes and ends around the call: unlike a
// Lease, nothing Python holds can keep them, and a view that outlived the call would
// read or write a block the pool gives to other tensors.
// Approach: RecomputeCall.out and .inputs are RecipeBuffer objects that give the same
// zero-copy views as a Lease (buffer protocol, numpy(), DLPack; read-only inputs) while
// the call runs. When the function returns, every buffer is closed (no new view); a view
// still alive then makes the rebuild fail with BufferError (the tensor stays dropped)
// rather than leave it pointing at memory the pool reuses. After an exception the
// buffers are closed without that check (the traceback holds the function's locals).
// A device buffer in host memory (the simulated device) waits for the call's stream
// before its first view, as a device Lease does, so the inputs' copy-ins are there.
// Limitations: a view kept in a reference cycle counts as alive until the cycle
// collector runs; del views (or let them go out of scope) before returning.
struct py_recipe_buffer {
  void* data{nullptr};
  std::size_t bytes{0};
  bool readonly{false};
  bool device{false};  // an on_device recipe's buffer (device tier)
  bool cuda{false};    // the backend is CUDA
  int device_ordinal{0};
  std::uint64_t stream{0};
  py_pool* owner{nullptr};
  bool open{true};
  bool real_memory{true};  // the backend has bytes (not phantom)
  bool synced{false};
  std::size_t exports{0};

  void check_viewable() const
  {
    if (!open) { throw nb::buffer_error("the recompute call returned: its buffers are no longer reachable"); }
    if (!real_memory) {
      throw nb::buffer_error("the backend has phantom memory (sim memory='phantom'): a recipe's buffer has no bytes to view");
    }
  }
  void wait_for_host_bytes();
};

void py_recipe_buffer::wait_for_host_bytes()
{
  if (!device || cuda || synced || owner == nullptr) { return; }
  synced = true;
  nb::gil_scoped_release unlocked;
  tierpool::event e = owner->pool.create_event();
  e.record(tierpool::stream_handle{static_cast<std::uintptr_t>(stream)});
  e.synchronize();
}

int recipe_buffer_getbuffer(PyObject* self, Py_buffer* view, int flags)
{
  py_recipe_buffer* b = nb::inst_ptr<py_recipe_buffer>(self);
  try {
    b->check_viewable();
    if (b->device && b->cuda) { throw nb::buffer_error("a device buffer on the CUDA backend is not host memory: use DLPack"); }
    b->wait_for_host_bytes();
  } catch (std::exception const& e) {
    view->obj = nullptr;
    PyErr_SetString(PyExc_BufferError, e.what());
    return -1;
  }
  if (PyBuffer_FillInfo(view, self, b->data, static_cast<Py_ssize_t>(b->bytes), b->readonly ? 1 : 0, flags) != 0) {
    return -1;
  }
  ++b->exports;
  return 0;
}

void recipe_buffer_releasebuffer(PyObject* self, Py_buffer*)
{
  py_recipe_buffer* b = nb::inst_ptr<py_recipe_buffer>(self);
  if (b->exports != 0) { --b->exports; }
}

PyType_Slot recipe_buffer_slots[] = {
    {Py_bf_getbuffer, reinterpret_cast<void*>(recipe_buffer_getbuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void*>(recipe_buffer_releasebuffer)},
    {0, nullptr},
};

// A 1-D uint8 ndarray over the buffer's bytes whose owner keeps the buffer alive and counted.
template <class Array>
Array recipe_buffer_array(nb::handle self)
{
  py_recipe_buffer* b = nb::inst_ptr<py_recipe_buffer>(self);
  b->check_viewable();
  b->wait_for_host_bytes();
  self.inc_ref();
  ++b->exports;
  nb::capsule owner(self.ptr(), [](void* p) noexcept {
    PyObject* obj = static_cast<PyObject*>(p);
    py_recipe_buffer* rb = nb::inst_ptr<py_recipe_buffer>(obj);
    if (rb->exports != 0) { --rb->exports; }
    Py_DECREF(obj);
  });
  std::size_t const shape[1] = {b->bytes};
  bool const on_cuda = b->device && b->cuda;
  int const dev_type = on_cuda ? nb::device::cuda::value : nb::device::cpu::value;
  return Array(b->data, 1, shape, owner, nullptr, nb::dtype<std::uint8_t>(), dev_type, on_cuda ? b->device_ordinal : 0);
}

// What a Python recompute function is given (RecomputeCall).
struct py_recompute_call {
  std::uint64_t id{0};
  std::size_t bytes{0};
  std::uint32_t tier{0};
  std::uint64_t stream{0};
  bool on_device{false};
  nb::object out;
  nb::tuple inputs;
};

// A typed view of the first bytes of the flat uint8 numpy array `arr` (`nbytes` long): views
// of it keep it (and so its owner) alive. `what` names the call, `whose` the bytes in errors.
nb::object typed_view(nb::object arr, nb::handle dtype, nb::handle shape, std::size_t nbytes, char const* what,
                      char const* whose)
{
  if (dtype.is_none() && shape.is_none()) { return arr; }
  nb::object const np = nb::module_::import_("numpy");
  nb::object const dt = np.attr("dtype")(dtype.is_none() ? nb::object(nb::str("uint8")) : nb::borrow(dtype));
  std::size_t const item = nb::cast<std::size_t>(dt.attr("itemsize"));
  std::size_t count = nbytes / item;
  nb::object shp;
  if (shape.is_none()) {
    shp = nb::make_tuple(count);
  } else {
    shp = nb::tuple(np.attr("atleast_1d")(shape).attr("tolist")());
    count = 1;
    for (nb::handle d : shp) {
      long long const v = nb::cast<long long>(d);
      if (v < 0) { throw nb::value_error((std::string(what) + ": a negative dimension in shape").c_str()); }
      count *= static_cast<std::size_t>(v);
    }
  }
  if (count * item > nbytes) {
    throw nb::value_error((std::string(what) + ": " + std::to_string(count) + " elements of " + std::to_string(item) +
                           " bytes need " + std::to_string(count * item) + " bytes; " + whose + " has " +
                           std::to_string(nbytes))
                              .c_str());
  }
  nb::object head = arr.attr("__getitem__")(nb::slice(nb::int_(0), nb::int_(count * item), nb::int_(1)));
  return head.attr("view")(dt).attr("reshape")(shp);
}

// ---- exceptions: instances of the classes in tierpool/_errors.py, with the C++ figures ----

void raise_py(char const* cls_name, char const* what, std::vector<std::pair<char const*, nb::object>> const& attrs)
{
  try {
    nb::object cls = nb::module_::import_("tierpool._errors").attr(cls_name);
    nb::object inst = cls(nb::str(what));
    for (auto const& [k, v] : attrs) { nb::setattr(inst, k, v); }
    PyErr_SetObject(cls.ptr(), inst.ptr());
  } catch (nb::python_error& e) {
    e.restore();
  }
}

nb::object oom_figures_dict(tierpool::oom_figures const& f)
{
  nb::dict d;
  d["cause"] = std::string(tierpool::to_string(f.cause));
  d["capacity_bytes"] = f.capacity_bytes;
  d["resident_bytes"] = f.resident_bytes;
  d["pinned_bytes"] = f.pinned_bytes;
  d["in_flight_bytes"] = f.in_flight_bytes;
  d["busy_bytes"] = f.busy_bytes;
  d["free_bytes"] = f.free_bytes;
  d["largest_free_block"] = f.largest_free_block;
  d["attempts"] = f.attempts;
  return d;
}

std::vector<std::pair<char const*, nb::object>> oom_attrs(tierpool::out_of_memory const& e)
{
  return {{"cause", nb::str(std::string(tierpool::to_string(e.cause())).c_str())},
          {"tier", nb::int_(static_cast<std::uint32_t>(e.tier()))},
          {"requested", nb::int_(e.requested())},
          {"figures", oom_figures_dict(e.figures())}};
}

// The Python OutOfMemory (QuotaExceeded) of `e`, its message extended by `suffix`.
void raise_oom(tierpool::out_of_memory const& e, std::string const& suffix, std::size_t view_bytes)
{
  std::string const what = std::string(e.what()) + suffix;
  auto attrs = oom_attrs(e);
  attrs.emplace_back("python_view_bytes", nb::int_(view_bytes));
  if (auto const* q = dynamic_cast<tierpool::quota_exceeded const*>(&e)) {
    attrs.emplace_back("tenant", nb::int_(q->tenant()));
    attrs.emplace_back("quota", nb::int_(q->quota()));
    attrs.emplace_back("live", nb::int_(q->live()));
    raise_py("QuotaExceeded", what.c_str(), attrs);
  } else {
    raise_py("OutOfMemory", what.c_str(), attrs);
  }
}

void translate(std::exception_ptr const& p, void*)
{
  try {
    std::rethrow_exception(p);
  } catch (tierpool::device_lost const& e) {
    nb::list ids;
    for (auto id : e.lost_tensors()) { ids.append(static_cast<std::uint64_t>(id)); }
    raise_py("DeviceLost", e.what(),
             {{"code", nb::str(std::string(tierpool::to_string(e.code())).c_str())},
              {"lost_tensors", ids},
              {"lost_names", nb::cast(e.lost_names())}});
  } catch (tierpool::storage_error const& e) {
    raise_py("StorageError", e.what(),
             {{"code", nb::str(std::string(tierpool::to_string(e.code())).c_str())},
              {"failure", nb::str(std::string(tierpool::to_string(e.failure())).c_str())},
              {"errno", nb::int_(e.errno_value())}});
  } catch (tierpool::backend_error const& e) {
    raise_py("BackendError", e.what(), {{"code", nb::str(std::string(tierpool::to_string(e.code())).c_str())}});
  } catch (tierpool::out_of_memory const& e) {
    raise_oom(e, "", 0);
  } catch (tierpool::trace_error const& e) {
    raise_py("TraceError", e.what(), {});
  } catch (tierpool::logic_error const& e) {
    raise_py("LogicError", e.what(), {});
  } catch (tierpool::bad_alloc const& e) {
    raise_py("OutOfMemory", e.what(), {});
  }
}

// ---- pool construction ----

tierpool::pool_options make_options(tierpool::python::policy_host& host,
                                    std::optional<std::vector<nb::object>> const& tiers, nb::handle policy,
                                    nb::handle prefetch, std::string const& backend, int device,
                                    std::string const& sim_memory, std::string const& sim_clock,
                                    std::optional<std::size_t> sim_device_bytes, bool read_environment,
                                    std::map<std::uint32_t, std::size_t> const& tenant_quotas,
                                    std::string const& trace_path, bool publish, bool quiet,
                                    std::vector<nb::dict> const& sim_faults, std::uint64_t sim_fault_seed,
                                    std::optional<nb::dict> const& actions, bool compaction,
                                    bool compact_before_failing, std::int64_t window_eviction_share)
{
  tierpool::pool_options o;
  if (tiers) {
    for (nb::object const& t : *tiers) {
      if (nb::isinstance<tierpool::tier_options>(t)) {
        o.tiers.push_back(nb::cast<tierpool::tier_options>(t));
      } else if (nb::isinstance<nb::dict>(t)) {
        o.tiers.push_back(tier_from_dict(nb::borrow<nb::dict>(t), host));
      } else {
        throw tierpool::logic_error("Pool(tiers=...): each tier is a TierOptions or a dict");
      }
    }
  }
  o.policy = host.resolve(policy, false);
  o.prefetch = host.resolve(prefetch, true);
  o.registry = &host.registry;
  o.backend = tierpool::parse_backend_choice(backend);
  o.device = device;
  if (sim_memory == "real") {
    o.sim.memory = tierpool::sim_memory_mode::real;
  } else if (sim_memory == "phantom") {
    o.sim.memory = tierpool::sim_memory_mode::phantom;
  } else {
    throw tierpool::logic_error("unknown sim_memory '" + sim_memory + "' (known: real, phantom)");
  }
  if (sim_clock == "wall") {
    o.sim.clock = tierpool::sim_clock_mode::wall;
  } else if (sim_clock == "virtual" || sim_clock == "virtual-hidden") {
    o.sim.clock = tierpool::sim_clock_mode::virtual_clock;
    o.sim.hide_device_times = sim_clock == "virtual-hidden";  // as on a GPU: measured with events
  } else {
    throw tierpool::logic_error("unknown sim_clock '" + sim_clock + "' (known: wall, virtual, virtual-hidden)");
  }
  if (sim_device_bytes) { o.sim.device_bytes = *sim_device_bytes; }
  for (nb::dict const& f : sim_faults) { o.sim.faults.rules.push_back(fault_from_dict(f)); }
  o.sim.faults.seed = sim_fault_seed;
  o.read_environment = read_environment;
  o.tenant_quotas = tenant_quotas;
  o.trace_path = trace_path;
  o.publish.enabled = publish;
  o.notice = quiet ? tierpool::fallback_notice::silent : tierpool::fallback_notice::stderr_line;
  if (actions) { o.actions = actions_from_dict(*actions); }
  o.compaction = compaction;
  o.compact_before_failing = compact_before_failing;
  if (window_eviction_share < 0) {
    throw tierpool::logic_error("Pool(window_eviction_share=" + std::to_string(window_eviction_share) +
                                "): must be 0 (off) or a positive share of a tier");
  }
  o.window_eviction_share = static_cast<std::size_t>(window_eviction_share);
  return o;
}

py_lease make_lease(py_pool& p, py_tensor const& t, tierpool::lease&& l, bool host)
{
  auto const& caps = p.pool.backend().caps();
  py_lease out;
  out.handle = std::move(l);
  out.owner = &p;
  out.name = t.name;
  out.host = host;
  out.real_memory = caps.real_memory;
  out.cuda = caps.name == "cuda";
  out.device = caps.device_ordinal;
  return out;
}

nb::dict residency_dict(tierpool::tensor_residency const& r)
{
  nb::dict d;
  d["id"] = static_cast<std::uint64_t>(r.id);
  d["bytes"] = r.bytes;
  d["home"] = static_cast<std::uint32_t>(r.home);
  nb::list copies;
  for (auto const& c : r.copies) {
    nb::dict cd;
    cd["tier"] = static_cast<std::uint32_t>(c.tier);
    cd["valid"] = c.valid;
    cd["dirty"] = c.dirty;
    cd["in_flight"] = c.in_flight;
    cd["leases"] = c.leases;
    cd["offset"] = c.offset;
    cd["block_bytes"] = c.block_bytes;
    copies.append(cd);
  }
  d["copies"] = copies;
  d["dirty"] = r.dirty;
  d["in_flight"] = r.in_flight;
  d["prefetch_queued"] = r.prefetch_queued;
  d["prefetched"] = r.prefetched;
  d["leases"] = r.leases;
  d["write_leases"] = r.write_leases;
  d["access_count"] = r.access_count;
  d["last_use"] = r.last_use;
  d["dropped_for_recompute"] = r.dropped_for_recompute;
  d["discarded"] = r.discarded;
  d["recomputable"] = r.recomputable;
  return d;
}

nb::dict capacity_dict(tierpool::capacity_report const& c)
{
  nb::dict d;
  d["tier"] = c.tier;
  d["requested_bytes"] = c.requested_bytes;
  d["previous_bytes"] = c.previous_bytes;
  d["capacity_bytes"] = c.capacity_bytes;
  d["reserved_before"] = c.reserved_before;
  d["reserved_bytes"] = c.reserved_bytes;
  d["released_bytes"] = c.released_bytes;
  d["moved_tensors"] = c.moved_tensors;
  d["moved_bytes"] = c.moved_bytes;
  d["written_back"] = c.written_back;
  d["reached"] = c.reached;
  d["why"] = c.why;
  return d;
}

// True when a lease of `t` waits for its Python views (Note [A view defers its lease's release]).
bool held_by_views(py_tensor const& t)
{
  if (t.owner == nullptr || !t.handle.valid()) { return false; }
  auto const id = static_cast<std::uint64_t>(t.handle.id());
  for (auto const& [l, v] : t.owner->view_pins) {
    if (v.tensor == id && l->release_pending) { return true; }
  }
  return false;
}

tierpool::tensor const& live(py_tensor const& t)
{
  if (!t.handle.valid()) { throw tierpool::logic_error("the tensor '" + t.name + "' was freed (or never allocated)"); }
  return t.handle;
}

nb::object json_loads(std::string const& text) { return nb::module_::import_("json").attr("loads")(text); }

// Pool.stats(): the Python policies' fallbacks, per tier and in all (py_policy.hpp).
void add_policy_figures(tierpool::python::policy_host const& host, nb::object& stats)
{
  auto const fallbacks = host.failures->fallbacks();
  std::uint64_t total = 0;
  nb::list tiers = nb::borrow<nb::list>(stats["tiers"]);
  for (std::size_t i = 0; i < nb::len(tiers); ++i) {
    auto const it = fallbacks.find(static_cast<std::uint32_t>(i));
    std::uint64_t const n = it == fallbacks.end() ? 0 : it->second;
    tiers[i]["policy_fallbacks"] = n;
    total += n;
  }
  stats["policy_fallbacks"] = total;
  stats["predictor_failures"] = host.failures->predictor_failures();
}

// Run `f` (which may release the GIL); an OutOfMemory it throws while Python views pin
// leases of this pool says so (Note [A view defers its lease's release]).
template <class F>
auto naming_view_pins(py_pool& p, F&& f)
{
  try {
    return f();
  } catch (tierpool::out_of_memory const& e) {
    if (p.view_pins.empty()) { throw; }
    raise_oom(e,
              "; Python views (numpy arrays, memoryviews, DLPack tensors) of live leases pin " +
                  p.describe_view_pins() + " -- delete those views (or run gc.collect()) to unpin them",
              p.view_bytes());
    throw nb::python_error();
  }
}

nb::dict view_pins_dict(py_pool const& p)
{
  nb::dict d;
  d["leases"] = p.view_pins.size();
  d["bytes"] = p.view_bytes();
  nb::list ls;
  for (auto const& [l, v] : p.view_pins) {
    nb::dict e;
    e["tensor"] = v.tensor;
    e["name"] = v.name;
    e["bytes"] = v.bytes;
    e["host"] = v.host;
    e["views"] = l->exports;
    e["released"] = l->release_pending;
    ls.append(e);
  }
  d["pins"] = ls;
  return d;
}

// Note [DLPack consumer streams]
// ------------------------------
// Rationale: DLPack's `stream` keyword names the consumer's stream: None or 1 the legacy
// default stream, 2 the per-thread default stream, -1 no synchronization, anything else a
// cudaStream_t. The pool orders its own streams only, and torch.from_dlpack on torch's
// default stream passes 1 (seen on an H200: every zero-copy view failed with "unknown
// stream 1").
// Approach: a cudaStream_t the pool has not seen is wrapped (wrap_native_stream: idempotent,
// and it stays wrapped for the pool's life, as torch's pooled streams live for the
// process's); one of the pool's own streams is used as it is. The two default streams are no
// streams a pool can adopt, so for them the host waits for the producer's stream before the
// capsule is made (DLPack lets a producer synchronize).

/// DLPack's `stream` keyword for a CUDA producer: -1, 1, 2 or a cudaStream_t.
std::int64_t dlpack_consumer(nb::object const& stream)
{
  std::int64_t const consumer = stream.is_none() ? 1 : nb::cast<std::int64_t>(stream);
  if (consumer < -1 || consumer == 0) {
    throw nb::value_error("__dlpack__(stream=...): a CUDA stream is None, -1, 1, 2 or a cudaStream_t");
  }
  return consumer;
}

/// Orders the consumer's stream after `producer` (Note [DLPack consumer streams]).
void dlpack_order(tierpool::pool& pool, tierpool::stream_handle producer, std::int64_t consumer)
{
  if (consumer == -1 || static_cast<std::uintptr_t>(consumer) == producer.value) { return; }
  nb::gil_scoped_release unlocked;
  if (consumer == 1 || consumer == 2) {
    pool.synchronize(producer);
    return;
  }
  tierpool::stream_handle target{static_cast<std::uintptr_t>(consumer)};
  std::string why_not;  // why the stream could not be wrapped, if it is not the pool's own either
  try {
    target = pool.wrap_native_stream(reinterpret_cast<void*>(static_cast<std::uintptr_t>(consumer)));  // NOLINT
  } catch (tierpool::logic_error const& err) {
    why_not = err.what();  // one of the pool's own streams (create_stream) is ordered as it is
  }
  tierpool::event e = pool.create_event();
  e.record(producer);
  try {
    e.wait(target);
  } catch (tierpool::logic_error const&) {
    if (why_not.empty()) { throw; }
    throw tierpool::logic_error("__dlpack__(stream=...): " + why_not);  // e.g. a stream of another device
  }
}

}  // namespace

NB_MODULE(_tierpool, m)
{
  m.doc() = "tierpool's C++ core (nanobind bindings); use the package `tierpool`, which re-exports it.";
  m.attr("__version__") = std::to_string(TIERPOOL_VERSION_MAJOR) + "." + std::to_string(TIERPOOL_VERSION_MINOR) + "." +
                          std::to_string(TIERPOOL_VERSION_PATCH);
  nb::register_exception_translator(translate);
  tierpool::python::bind_python_policies(m);  // TensorView, EvictionRequest, AccessView, PolicyDriver (py_policy.cpp)

  // ---- TierOptions ----
  nb::class_<tierpool::tier_options>(m, "TierOptions",
                                     "One tier of a pool (fastest first in Pool(tiers=[...])).\n\n"
                                     "kind: 'device', 'pinned_host', 'managed', 'host' or 'storage'; capacity_bytes: 0 = the "
                                     "kind's default; chunk_bytes: bytes requested from the backend at a time (0 = "
                                     "min(capacity, 64 MiB)); policy: eviction policy spec ('' = the pool's); name: "
                                     "for messages and statistics ('' = the kind's name); numa_node: -1 = none; "
                                     "storage: a storage tier's dict (path: a directory, a block device or a new "
                                     "file; engine: 'automatic', 'pread' or 'io_uring'; direct: 'automatic', 'on' or "
                                     "'off'; piece_bytes; queue_depth; verify_writes; preallocate; engine 'compressed' with codec 'lz4', 'zstd' or 'q8' and memory_bytes: a compressed host tier).")
      .def(
          "__init__",
          [](tierpool::tier_options* self, std::string const& kind, std::size_t capacity_bytes,
             std::size_t chunk_bytes, std::string const& policy, std::string const& name, int numa_node,
             std::optional<nb::dict> const& storage) {
            new (self) tierpool::tier_options{};
            self->kind = parse_tier_kind(kind);
            self->capacity_bytes = capacity_bytes;
            self->chunk_bytes = chunk_bytes;
            self->policy = policy;
            self->name = name;
            self->numa_node = numa_node;
            if (storage) { self->storage = storage_from_dict(*storage); }
          },
          "kind"_a = "device", "capacity_bytes"_a = 0, "chunk_bytes"_a = 0, "policy"_a = "", "name"_a = "",
          "numa_node"_a = -1, "storage"_a = nb::none(), "Make a tier's options (see the class docstring).")
      .def_prop_rw(
          "kind", [](tierpool::tier_options const& t) { return std::string(tierpool::to_string(t.kind)); },
          [](tierpool::tier_options& t, std::string const& k) { t.kind = parse_tier_kind(k); },
          "The memory behind the tier: 'device', 'pinned_host', 'managed', 'host' or 'storage'.")
      .def_rw("capacity_bytes", &tierpool::tier_options::capacity_bytes, "Capacity in bytes; 0 = the kind's default.")
      .def_rw("chunk_bytes", &tierpool::tier_options::chunk_bytes,
              "Bytes requested from the backend at a time; 0 = min(capacity, 64 MiB).")
      .def_rw("policy", &tierpool::tier_options::policy, "Eviction policy spec ('lru', 's3fifo:small_ratio=0.1'); '' = the pool's.")
      .def_rw("name", &tierpool::tier_options::name, "Name for messages and statistics; '' = the kind's name.")
      .def_rw("numa_node", &tierpool::tier_options::numa_node, "Host kinds: bind to this NUMA node (-1: none).")
      .def_prop_rw(
          "storage", [](tierpool::tier_options const& t) { return storage_dict(t.storage); },
          [](tierpool::tier_options& t, nb::dict const& d) { t.storage = storage_from_dict(d); },
          "Storage tiers: where and how (a dict: path, engine, direct, piece_bytes, queue_depth, verify_writes, "
          "preallocate, codec, memory_bytes).")
      .def("__repr__", [](tierpool::tier_options const& t) {
        return "TierOptions(kind='" + std::string(tierpool::to_string(t.kind)) +
               "', capacity_bytes=" + std::to_string(t.capacity_bytes) + ", chunk_bytes=" + std::to_string(t.chunk_bytes) +
               ", policy='" + t.policy + "', name='" + t.name + "')";
      }, "The options as a constructor call.");

  // ---- FitReport ----
  nb::class_<tierpool::fit_report>(m, "FitReport",
                                   "What Pool.fits() found: how many more tensors of one size a tier can take, now "
                                   "and after eviction, and what limits it (`limit`: 'capacity', 'pinned', "
                                   "'fragmentation' or 'quota').")
      .def_ro("tier", &tierpool::fit_report::tier, "The tier's name.")
      .def_ro("bytes", &tierpool::fit_report::bytes, "The tensor size asked about.")
      .def_ro("slot_bytes", &tierpool::fit_report::slot_bytes, "What one such tensor takes in the tier (aligned).")
      .def_ro("fits_now", &tierpool::fit_report::fits_now, "How many fit without evicting or waiting.")
      .def_ro("fits_after_eviction", &tierpool::fit_report::fits_after_eviction, "How many fit after evicting what can be.")
      .def_ro("largest_now", &tierpool::fit_report::largest_now, "The largest tensor placeable now without evicting.")
      .def_ro("largest_after_eviction", &tierpool::fit_report::largest_after_eviction,
              "The largest tensor placeable after evicting.")
      .def_ro("free_bytes", &tierpool::fit_report::free_bytes, "Free bytes in the tier's chunks.")
      .def_ro("growable_bytes", &tierpool::fit_report::growable_bytes, "Capacity not yet obtained from the backend.")
      .def_ro("evictable_bytes", &tierpool::fit_report::evictable_bytes, "Bytes of copies eviction could take out now.")
      .def_ro("pinned_bytes", &tierpool::fit_report::pinned_bytes, "Bytes of copies held by live leases.")
      .def_ro("in_flight_bytes", &tierpool::fit_report::in_flight_bytes,
              "Bytes of blocks whose streams have not got there yet.")
      .def_ro("quota_left", &tierpool::fit_report::quota_left,
              "The tenant's quota minus its live bytes (2**64-1 without a quota).")
      .def_prop_ro(
          "limit", [](tierpool::fit_report const& f) { return std::string(tierpool::to_string(f.limit)); },
          "What bounds fits_after_eviction: 'capacity', 'pinned', 'fragmentation' or 'quota'.")
      .def("__repr__", [](tierpool::fit_report const& f) {
        return "FitReport(tier='" + f.tier + "', bytes=" + std::to_string(f.bytes) + ", fits_now=" +
               std::to_string(f.fits_now) + ", fits_after_eviction=" + std::to_string(f.fits_after_eviction) +
               ", limit='" + std::string(tierpool::to_string(f.limit)) + "')";
      }, "A short summary.");

  // ---- Tensor ----
  nb::class_<py_tensor>(m, "Tensor",
                        "A tensor of a Pool (from Pool.allocate): an owning handle to bytes whose home tier can "
                        "change. `with pool.allocate(n) as t:` frees it at the end of the block; deleting the last "
                        "reference frees it too (once its leases end).")
      .def_prop_ro("id", [](py_tensor const& t) { return static_cast<std::uint64_t>(live(t).id()); },
                   "The tensor's id in its pool.")
      .def_prop_ro("nbytes", [](py_tensor const& t) { return live(t).bytes(); }, "Size in bytes as requested.")
      .def_ro("name", &py_tensor::name, "The name given to allocate() ('' when none).")
      .def_prop_ro("valid", [](py_tensor const& t) { return t.handle.valid(); }, "False once freed.")
      .def("free", [](py_tensor& t) { t.free(); },
           "Free the tensor now (as Pool.free). Raises LogicError when already freed (double free) or leased.")
      .def("__enter__", [](nb::handle self) { return self; }, "Return the tensor.")
      .def(
          "__exit__",
          [](py_tensor& t, nb::handle exc_type, nb::handle, nb::handle) {
            if (!t.handle.valid()) { return false; }
            if (exc_type.is_none() && !held_by_views(t)) {
              t.free();
            } else {
              nb::gil_scoped_release unlocked;  // dropping the handle may free (the tier's lock)
              t.handle = tierpool::tensor{};  // do not hide the exception: free when its leases end
            }
            return false;
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
          "Free the tensor (unless already freed); when Python views still pin one of its leases, it is freed "
          "once they are gone.")
      .def("__repr__", [](py_tensor const& t) {
        if (!t.handle.valid()) { return std::string("<tierpool.Tensor (freed) name='") + t.name + "'>"; }
        return "<tierpool.Tensor id=" + std::to_string(static_cast<std::uint64_t>(t.handle.id())) +
               " nbytes=" + std::to_string(t.handle.bytes()) + " name='" + t.name + "'>";
      }, "id, size and name.");

  // ---- Lease ----
  nb::class_<py_lease>(m, "Lease",
                       "A pin on a tensor that makes its bytes reachable (from Pool.acquire or Pool.acquire_host); "
                       "the tensor is neither moved nor evicted while it lives. `with` releases it.\n\n"
                       "Zero-copy views: memoryview(lease) and numpy.asarray(lease) (buffer protocol, host memory "
                       "only, read-only for access='read') and numpy.from_dlpack(lease) / torch.from_dlpack(lease) "
                       "(DLPack; kDLCPU on the sim backend and for host leases, kDLCUDA for a device lease on the "
                       "CUDA backend). A view keeps the lease alive: release() (or the end of a `with` block) "
                       "while views exist ends the lease only when the last view dies, and until then the tensor "
                       "stays pinned (Pool.summary() and Pool.stats()['python_views'] name it). A view of a device "
                       "lease in host memory (the simulated device) waits for the copies the lease's stream was "
                       "ordered after, so its bytes are there.",
                       nb::type_slots(lease_slots))
      .def_prop_ro("nbytes", [](py_lease const& l) { return l.handle.bytes(); }, "Size in bytes (0 once released).")
      .def_prop_ro("access", [](py_lease const& l) { return std::string(access_name(l.handle.access())); },
                   "The access the lease was taken with: 'read', 'read_write' or 'write_discard'.")
      .def_prop_ro("active", [](py_lease const& l) { return l.handle.active() && !l.release_pending; },
                   "True until released (release() or the end of a `with` block).")
      .def_prop_ro("release_pending", [](py_lease const& l) { return l.release_pending; },
                   "True while a release waits for the lease's last view to die (the tensor stays pinned).")
      .def_prop_ro("host", [](py_lease const& l) { return l.host; }, "True for a lease from acquire_host().")
      .def_prop_ro("stream", [](py_lease const& l) { return static_cast<std::uint64_t>(l.handle.stream().value); },
                   "The stream the lease is ordered on (0: the default stream).")
      .def_prop_ro("tensor_id", [](py_lease const& l) { return static_cast<std::uint64_t>(l.handle.id()); },
                   "The tensor's id.")
      .def_prop_ro("data_ptr", [](py_lease const& l) { return reinterpret_cast<std::uintptr_t>(l.handle.data()); },
                   "The address of the bytes (device memory for a device lease on CUDA; 0 once released).")
      .def_prop_ro("exports", [](py_lease const& l) { return l.exports; }, "Zero-copy views of this lease that still exist.")
      .def("release", &py_lease::release,
           "End the lease (idempotent). While views of its bytes exist, the lease ends when the last of them "
           "dies (release_pending is True until then).")
      .def(
          "numpy",
          [](nb::handle self, nb::handle dtype, nb::handle shape) {
            py_lease const* l = nb::inst_ptr<py_lease>(self);
            if (!l->host && l->cuda) { throw nb::buffer_error("a device lease on the CUDA backend is not host memory: use DLPack"); }
            nb::object arr = nb::cast(lease_array<nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>>(self));
            return typed_view(arr, dtype, shape, l->handle.bytes(), "Lease.numpy", "the lease");
          },
          "dtype"_a.none() = nb::none(), "shape"_a.none() = nb::none(),
          "A numpy array over the lease's bytes (zero-copy, host memory only); it keeps the lease alive. Without "
          "arguments a flat uint8 array of every byte; with dtype (and shape) a typed view of the first bytes "
          "(ValueError when they are more than the lease has).")
      .def(
          "__dlpack__",
          [](nb::handle self, nb::kwargs kwargs) {
            py_lease* l = nb::inst_ptr<py_lease>(self);
            nb::object stream = nb::none();
            if (kwargs.contains("stream")) {
              stream = kwargs["stream"];
              nb::del(kwargs["stream"]);
            }
            if (!l->host && l->cuda) {
              // The consumer's stream waits for the lease's (the copy-in): Note [DLPack consumer streams].
              std::int64_t const consumer = dlpack_consumer(stream);
              l->check_viewable();
              dlpack_order(l->owner->pool, l->handle.stream(), consumer);
            } else if (!stream.is_none() && !(nb::isinstance<nb::int_>(stream) && nb::cast<std::int64_t>(stream) == -1)) {
              throw nb::value_error("__dlpack__(stream=...): host memory has no stream (pass None)");
            }
            nb::object arr = nb::cast(lease_array<nb::ndarray<nb::array_api, std::uint8_t, nb::ndim<1>>>(self));
            return arr.attr("__dlpack__")(**kwargs);
          },
          "A DLPack capsule over the lease's bytes (1-D uint8, zero-copy); it keeps the lease alive. "
          "stream (DLPack's keyword): for a device lease on CUDA, the consumer's stream, made to wait for the "
          "lease's stream without blocking the host (a stream the pool has not seen is wrapped); None, 1 (the "
          "legacy default stream) or 2 (the per-thread one): the host waits for the lease's stream; -1: no wait. "
          "For host memory None (the bytes are there when the call returns).")
      .def(
          "__dlpack_device__",
          [](py_lease const& l) {
            if (!l.host && l.cuda) { return nb::make_tuple(nb::int_(static_cast<int>(nb::device::cuda::value)), l.device); }
            return nb::make_tuple(nb::int_(static_cast<int>(nb::device::cpu::value)), 0);
          },
          "(device type, device id) of the bytes: (1, 0) for host memory (kDLCPU), (2, ordinal) for CUDA device memory.")
      .def("__enter__", [](nb::handle self) { return self; }, "Return the lease.")
      .def(
          "__exit__", [](py_lease& l, nb::handle, nb::handle, nb::handle) { l.release(); return false; },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(), "Release the lease.")
      .def("__repr__", [](py_lease const& l) {
        return std::string("<tierpool.Lease ") + (l.handle.active() ? "" : "(released) ") +
               "tensor=" + std::to_string(static_cast<std::uint64_t>(l.handle.id())) + " nbytes=" +
               std::to_string(l.handle.bytes()) + " access='" + access_name(l.handle.access()) + "'" +
               (l.host ? " host" : " device") + ">";
      }, "tensor, size, access and where.");

  // ---- RecipeBuffer, RecomputeCall (Pool.set_recompute) ----
  nb::class_<py_recipe_buffer>(m, "RecipeBuffer",
                               "The bytes a recompute function writes (RecomputeCall.out) or reads "
                               "(RecomputeCall.inputs, read-only), valid only while the function runs. Zero-copy views as a Lease gives: memoryview(buf) and "
                               "numpy.asarray(buf) (buffer protocol; host memory, and the simulated device), "
                               "buf.numpy(dtype, shape), and DLPack (kDLCUDA for an on_device recipe on the CUDA "
                               "backend). Every view must be gone when the function returns: one still alive then "
                               "fails the rebuild with BufferError.",
                               nb::type_slots(recipe_buffer_slots))
      .def_prop_ro("nbytes", [](py_recipe_buffer const& b) { return b.bytes; }, "Size in bytes.")
      .def_prop_ro("readonly", [](py_recipe_buffer const& b) { return b.readonly; },
                   "True for an input's bytes (read them only).")
      .def_prop_ro("device", [](py_recipe_buffer const& b) { return b.device; },
                   "True in the device tier (an on_device recipe), False in a host tier.")
      .def_prop_ro("data_ptr", [](py_recipe_buffer const& b) { return reinterpret_cast<std::uintptr_t>(b.data); },
                   "The address of the bytes (device memory for an on_device recipe on CUDA).")
      .def_prop_ro("open", [](py_recipe_buffer const& b) { return b.open; },
                   "True while the recompute function runs; no view can be made after.")
      .def_prop_ro("exports", [](py_recipe_buffer const& b) { return b.exports; }, "Zero-copy views that still exist.")
      .def(
          "numpy",
          [](nb::handle self, nb::handle dtype, nb::handle shape) {
            py_recipe_buffer const* b = nb::inst_ptr<py_recipe_buffer>(self);
            if (b->device && b->cuda) { throw nb::buffer_error("a device buffer on the CUDA backend is not host memory: use DLPack"); }
            nb::object arr = b->readonly
                                 ? nb::cast(recipe_buffer_array<nb::ndarray<nb::numpy, std::uint8_t const, nb::ndim<1>>>(self))
                                 : nb::cast(recipe_buffer_array<nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>>(self));
            return typed_view(arr, dtype, shape, b->bytes, "RecipeBuffer.numpy", "the buffer");
          },
          "dtype"_a.none() = nb::none(), "shape"_a.none() = nb::none(),
          "A numpy array over the bytes (zero-copy, host memory only; read-only for an input): a flat uint8 array, "
          "or with dtype (and shape) a typed view of the first bytes (ValueError when they are more than there are).")
      .def(
          "__dlpack__",
          [](nb::handle self, nb::kwargs kwargs) {
            py_recipe_buffer* b = nb::inst_ptr<py_recipe_buffer>(self);
            nb::object stream = nb::none();
            if (kwargs.contains("stream")) {
              stream = kwargs["stream"];
              nb::del(kwargs["stream"]);
            }
            if (b->device && b->cuda) {
              std::int64_t const consumer = dlpack_consumer(stream);
              b->check_viewable();
              dlpack_order(b->owner->pool, tierpool::stream_handle{static_cast<std::uintptr_t>(b->stream)}, consumer);
            } else if (!stream.is_none() && !(nb::isinstance<nb::int_>(stream) && nb::cast<std::int64_t>(stream) == -1)) {
              throw nb::value_error("__dlpack__(stream=...): host memory has no stream (pass None)");
            }
            nb::object arr =
                b->readonly
                    ? nb::cast(recipe_buffer_array<nb::ndarray<nb::array_api, std::uint8_t const, nb::ndim<1>>>(self))
                    : nb::cast(recipe_buffer_array<nb::ndarray<nb::array_api, std::uint8_t, nb::ndim<1>>>(self));
            return arr.attr("__dlpack__")(**kwargs);
          },
          "A DLPack capsule over the bytes (1-D uint8, zero-copy). stream: as Lease.__dlpack__ (for an on_device "
          "buffer on CUDA the consumer's stream waits for RecomputeCall.stream).")
      .def(
          "__dlpack_device__",
          [](py_recipe_buffer const& b) {
            if (b.device && b.cuda) { return nb::make_tuple(nb::int_(static_cast<int>(nb::device::cuda::value)), b.device_ordinal); }
            return nb::make_tuple(nb::int_(static_cast<int>(nb::device::cpu::value)), 0);
          },
          "(device type, device id) of the bytes: (1, 0) for host memory, (2, ordinal) for CUDA device memory.")
      .def("__repr__", [](py_recipe_buffer const& b) {
        return std::string("<tierpool.RecipeBuffer ") + (b.open ? "" : "(closed) ") + "nbytes=" + std::to_string(b.bytes) +
               (b.readonly ? " read-only" : " writable") + (b.device ? " device" : " host") + ">";
      }, "size, access and where.");

  nb::class_<py_recompute_call>(m, "RecomputeCall",
                                "What a recompute function (Pool.set_recompute) is called with: write every byte of "
                                "`out` from the bytes of `inputs`.")
      .def_ro("id", &py_recompute_call::id, "The id of the tensor being rebuilt.")
      .def_ro("bytes", &py_recompute_call::bytes, "Its size in bytes.")
      .def_ro("tier", &py_recompute_call::tier, "The tier `out` is in.")
      .def_ro("stream", &py_recompute_call::stream,
              "on_device recipes: the stream to enqueue the work on (the acquire that asked for the tensor, and "
              "every later use, is ordered after it; do not wait); host recipes: 0.")
      .def_ro("on_device", &py_recompute_call::on_device, "True for an on_device recipe.")
      .def_ro("out", &py_recompute_call::out, "The tensor's bytes to write in full: a writable RecipeBuffer.")
      .def_ro("inputs", &py_recompute_call::inputs,
              "The inputs' bytes, in set_recompute's order: a tuple of read-only RecipeBuffer, in the same kind of "
              "memory as `out`.")
      .def("__repr__", [](py_recompute_call const& c) {
        return "<tierpool.RecomputeCall id=" + std::to_string(c.id) + " bytes=" + std::to_string(c.bytes) +
               " tier=" + std::to_string(c.tier) + " inputs=" + std::to_string(nb::len(c.inputs)) +
               (c.on_device ? " on_device" : " host") + ">";
      }, "id, size, tier, inputs and where.");

  // ---- Pool ----
  nb::class_<tierpool::event>(m, "Event",
                             "An event of a pool's streams (Pool.create_event): record it on a stream, query it, "
                             "wait for it on the host, or make another stream wait for it (no host wait). A "
                             "never-recorded event counts as complete. Keeps the pool's backend alive.")
      .def(
          "record",
          [](tierpool::event& e, std::optional<std::uint64_t> stream) {
            nb::gil_scoped_release unlocked;
            e.record(tierpool::stream_handle{static_cast<std::uintptr_t>(stream.value_or(0))});
          },
          "stream"_a.none() = nb::none(), "Capture the work queued on `stream` so far (None: the default stream).")
      .def(
          "query",
          [](tierpool::event const& e) {
            nb::gil_scoped_release unlocked;
            return e.query();
          },
          "True when the work the event captured has completed.")
      .def(
          "synchronize",
          [](tierpool::event const& e) {
            nb::gil_scoped_release unlocked;
            e.synchronize();
          },
          "Block until the work the event captured has completed.")
      .def(
          "wait",
          [](tierpool::event const& e, std::uint64_t stream) {
            nb::gil_scoped_release unlocked;
            e.wait(tierpool::stream_handle{static_cast<std::uintptr_t>(stream)});
          },
          "stream"_a, "Make work queued on `stream` after this call wait for the event; the host does not wait.");

  nb::class_<py_pool>(m, "Pool",
                      "A tiered memory pool: tiers from fastest (the device) to slowest, each with an eviction "
                      "policy; tensors move between them as leases need their bytes.\n\n"
                      "Pool(*, tiers=None, policy='lru', prefetch='none', backend='auto', device=0, "
                      "sim_memory='real', sim_clock='wall', sim_device_bytes=None, read_environment=True, "
                      "tenant_quotas={}, trace_path='', publish=True, quiet=False, sim_faults=[], sim_fault_seed=0, actions=None, compaction=False, "
                      "compact_before_failing=True, window_eviction_share=64)\n\n"
                      "tiers: a list of TierOptions or dicts with the same keys (None: device, pinned_host, host); "
                      "policy (and a tier dict's 'policy'): a spec ('lru', a registered Python policy's name) or a "
                      "Python EvictionPolicy class; prefetch: a spec or a Python Predictor class; "
                      "backend: 'auto' (CUDA when usable, else the simulated device), 'sim' or 'cuda'; "
                      "sim_memory: 'real' (bytes) or 'phantom' (address ranges only: no views); sim_clock: 'wall', "
                      "'virtual', or 'virtual-hidden' (the virtual clock with its device times hidden from the pool, "
                      "as a GPU's are: a planner measures them with timed events); sim_device_bytes: the simulated device's memory (default 256 MiB); "
                      "read_environment: the TIERPOOL_* variables win over these options (False ignores them); "
                      "publish: live figures for `tierpool top`; quiet: no message when falling back to sim; "
                      "sim_faults: fault rules of the simulated device, for testing failure paths, each a dict "
                      "{'kind': 'copy' (allocate, event, stream_create, prefetch, host_func, compute, any), "
                      "'nth': fail that matching call (1-based), 'probability': fail each with it}; "
                      "sim_fault_seed: the seed of the probabilistic rules; actions: the eviction actions, a dict "
                      "{'recompute': drop tensors with a recipe (Pool.set_recompute) when rebuilding is cheaper "
                      "(default True), 'by_cost': order a write-back's lower tiers by round-trip cost (default "
                      "True), 'h2d_bytes_per_s', 'd2h_bytes_per_s', 'storage_write_bytes_per_s', "
                      "'storage_read_bytes_per_s': the bandwidths actions are priced with (0: the backend's "
                      "models or defaults; negative: LogicError)}; compaction: move idle copies within a tier "
                      "before evicting when its free bytes cover a request in pieces, first waiting for vacated "
                      "blocks when they and the free bytes cover it (the host waits; stats key waits_to_compact); "
                      "compact_before_failing: do so once before a request would fail for fragmentation; "
                      "window_eviction_share: a request for at least 1/share of a tier that must evict takes one "
                      "contiguous run of victims (0: off; negative: LogicError).\n\n"
                      "`with Pool(...) as p:` closes the pool at the end of the block.")
      .def(
          "__init__",
          [](py_pool* self, std::optional<std::vector<nb::object>> const& tiers, nb::handle policy,
             nb::handle prefetch, std::string const& backend, int device, std::string const& sim_memory,
             std::string const& sim_clock, std::optional<std::size_t> sim_device_bytes, bool read_environment,
             std::map<std::uint32_t, std::size_t> const& tenant_quotas, std::string const& trace_path, bool publish,
             bool quiet, std::vector<nb::dict> const& sim_faults, std::uint64_t sim_fault_seed,
             std::optional<nb::dict> const& actions, bool compaction, bool compact_before_failing,
             std::int64_t window_eviction_share) {
            auto host = tierpool::python::make_policy_host();
            tierpool::pool_options o = make_options(*host, tiers, policy, prefetch, backend, device, sim_memory,
                                                    sim_clock, sim_device_bytes, read_environment, tenant_quotas,
                                                    trace_path, publish, quiet, sim_faults, sim_fault_seed, actions,
                                                    compaction, compact_before_failing, window_eviction_share);
            nb::gil_scoped_release unlocked;
            new (self) py_pool(std::move(host), std::move(o));
          },
          nb::kw_only(), "tiers"_a.none() = nb::none(), "policy"_a = nb::str("lru"), "prefetch"_a = nb::str("none"),
          "backend"_a = "auto", "device"_a = 0, "sim_memory"_a = "real", "sim_clock"_a = "wall",
          "sim_device_bytes"_a.none() = nb::none(), "read_environment"_a = true,
          "tenant_quotas"_a = std::map<std::uint32_t, std::size_t>{}, "trace_path"_a = "", "publish"_a = true,
          "quiet"_a = false, "sim_faults"_a = std::vector<nb::dict>{}, "sim_fault_seed"_a = 0,
          "actions"_a.none() = nb::none(), "compaction"_a = false, "compact_before_failing"_a = true,
          "window_eviction_share"_a = 64,
          "Build a pool (see the class docstring). Raises LogicError for bad options or an unknown policy, "
          "BackendError when the backend cannot be built.")
      .def(
          "allocate",
          [](py_pool& p, std::size_t nbytes, std::string const& name, float priority, std::uint32_t tenant,
             std::optional<std::uint32_t> preferred_tier, bool write_through, bool lossy_compression,
             bool compressible) {
               p.check();
            tierpool::tensor_options o;
            o.name = name;
            o.priority = priority;
            o.tenant = tenant;
            if (preferred_tier) { o.preferred_tier = tierpool::tier_id{*preferred_tier}; }
            o.write_through = write_through;
            o.lossy_compression = lossy_compression;
            o.compressible = compressible;
            py_tensor t;
            t.pool = &p.pool;
            t.owner = &p;
            t.name = name;
            naming_view_pins(p, [&] {
              nb::gil_scoped_release unlocked;
              t.handle = p.pool.allocate(nbytes, o);
            });
            return t;
          },
          "nbytes"_a, nb::kw_only(), "name"_a = "", "priority"_a = 0.0F, "tenant"_a = 0,
          "preferred_tier"_a.none() = nb::none(), "write_through"_a = false, "lossy_compression"_a = false,
          "compressible"_a = true, nb::keep_alive<0, 1>(),
          "Create a tensor of `nbytes` bytes (contents undefined) in the preferred tier, else the fastest with "
          "room. priority in [0, 1] (higher: keep resident longer); tenant: owner for quotas; write_through: keep "
          "a host copy valid after every device write; lossy_compression: a compressed tier with codec 'q8' may "
          "quantize it (float32); compressible=False: its write-backs pass over compressed tiers (data that does "
          "not compress, or must never be decoded). Raises OutOfMemory (QuotaExceeded for a tenant's quota).")
      .def(
          "acquire",
          [](py_pool& p, py_tensor const& t, std::string const& access, std::optional<std::uint64_t> stream) {
            p.check();
            tierpool::access_mode const a = parse_access(access);
            tierpool::stream_handle const s{static_cast<std::uintptr_t>(stream.value_or(0))};
            tierpool::tensor const& h = live(t);
            tierpool::lease l;
            naming_view_pins(p, [&] {
              nb::gil_scoped_release unlocked;
              l = p.pool.acquire(h, a, s);
            });
            return make_lease(p, t, std::move(l), false);
          },
          "tensor"_a, "access"_a = "read", "stream"_a.none() = nb::none(), nb::keep_alive<0, 1>(),
          nb::keep_alive<0, 2>(),
          "Lease the tensor's bytes in device-accessible memory for work on `stream` (None: the default stream), "
          "copying them in (and evicting others) if needed. access: 'read', 'read_write' or 'write_discard'. "
          "Raises OutOfMemory when the device tier cannot make room (e.g. everything is leased).")
      .def(
          "acquire_all",
          [](nb::handle self, nb::sequence items, std::optional<std::uint64_t> stream) {
            py_pool& p = nb::cast<py_pool&>(self);
            p.check();
            tierpool::stream_handle const s{static_cast<std::uintptr_t>(stream.value_or(0))};
            std::vector<nb::object> owners;  // the Tensor objects: each Lease keeps its own alive
            std::vector<py_tensor const*> pts;
            std::vector<tierpool::acquire_item> its;
            for (nb::handle h : items) {
              nb::object t = nb::borrow(h);
              std::string access = "read";
              if (nb::isinstance<nb::tuple>(h)) {
                auto const tup = nb::borrow<nb::tuple>(h);
                if (tup.size() != 2) {
                  throw tierpool::logic_error("Pool.acquire_all: an item is a Tensor or a (Tensor, access) pair (got a tuple of " +
                                              std::to_string(tup.size()) + ")");
                }
                t = tup[0];
                access = nb::cast<std::string>(tup[1]);
              }
              if (!nb::isinstance<py_tensor>(t)) {
                throw nb::type_error("Pool.acquire_all: an item is a Tensor or a (Tensor, access) pair");
              }
              py_tensor const& pt = nb::cast<py_tensor const&>(t);
              its.push_back({&live(pt), parse_access(access)});
              pts.push_back(&pt);
              owners.push_back(std::move(t));
            }
            std::vector<tierpool::lease> ls;
            naming_view_pins(p, [&] {
              nb::gil_scoped_release unlocked;
              ls = p.pool.acquire_all(its, s);
            });
            nb::list out;
            for (std::size_t i = 0; i < ls.size(); ++i) {
              nb::object l = nb::cast(make_lease(p, *pts[i], std::move(ls[i]), false));
              nb::keep_alive_obj(l, self);       // a lease keeps its pool, as acquire's
              nb::keep_alive_obj(l, owners[i]);  // and its tensor
              out.append(l);
            }
            return out;
          },
          "items"_a, "stream"_a.none() = nb::none(),
          "Lease several tensors for one piece of work on `stream` (a kernel's operands): all of them or none. "
          "items: Tensors (read) or (Tensor, access) pairs. Returns the Leases in the items' order, taken largest "
          "tensor first (a small one leased first can split the room a large one needs); when one acquire fails, "
          "those already taken are released and the error is raised.")
      .def(
          "acquire_host",
          [](py_pool& p, py_tensor const& t, std::string const& access) {
            p.check();
            tierpool::access_mode const a = parse_access(access);
            tierpool::tensor const& h = live(t);
            tierpool::lease l;
            naming_view_pins(p, [&] {
              nb::gil_scoped_release unlocked;
              l = p.pool.acquire_host(h, a);
            });
            return make_lease(p, t, std::move(l), true);
          },
          "tensor"_a, "access"_a = "read", nb::keep_alive<0, 1>(), nb::keep_alive<0, 2>(),
          "Lease the tensor's bytes in host memory, synchronously (for filling and checking them from Python).")
      .def(
          "prefetch",
          [](py_pool& p, py_tensor const& t, std::uint32_t tier) {
            p.check();
            tierpool::tensor const& h = live(t);
            nb::gil_scoped_release unlocked;
            p.pool.prefetch(h, tierpool::tier_id{tier});
          },
          "tensor"_a, "tier"_a = 0, "Queue a copy of the tensor into `tier` (default: the fastest); never blocks. A hint.")
      .def(
          "demote",
          [](py_pool& p, py_tensor const& t, std::uint32_t tier) {
            p.check();
            tierpool::tensor const& h = live(t);
            nb::gil_scoped_release unlocked;
            p.pool.demote(h, tierpool::tier_id{tier});
          },
          "tensor"_a, "tier"_a,
          "Move the tensor down to `tier`, writing it back if its newest bytes are above. Raises LogicError "
          "while it is leased.")
      .def(
          "discard",
          [](py_pool& p, py_tensor const& t) {
            p.check();
            tierpool::tensor const& h = live(t);
            nb::gil_scoped_release unlocked;
            p.pool.discard(h);
          },
          "tensor"_a,
          "Declare the tensor's bytes dead until a 'write_discard' lease writes new ones: its copies are dropped "
          "when evicted, never written back. Reading it before then raises LogicError; so does discarding it "
          "while leased. Recipes end as at a 'write_discard' lease: those that read it (a dropped dependent is "
          "rebuilt first), then its own, without a rebuild. Stats: discards, evicted_discarded(_bytes).")
      .def(
          "free",
          [](py_pool& p, py_tensor& t) {
            p.check();
            nb::gil_scoped_release unlocked;
            p.pool.free(t.handle);
          },
          "tensor"_a,
          "Free the tensor now (stream-ordered). Raises LogicError for a double free or a leased tensor.")
      .def(
          "fits",
          [](py_pool const& p, std::size_t nbytes, std::uint32_t tier, std::uint32_t tenant) {
            p.check();
            nb::gil_scoped_release unlocked;
            return p.pool.fits(nbytes, tierpool::tier_id{tier}, tenant);
          },
          "nbytes"_a, "tier"_a = 0, "tenant"_a = 0,
          "How many more tensors of `nbytes` tier `tier` can take, now and after eviction, within `tenant`'s "
          "quota: a FitReport.")
      .def(
          "stats",
          [](py_pool const& p) {
            p.check();
            std::string json;
            {
              nb::gil_scoped_release unlocked;
              json = tierpool::to_json(p.pool.stats());  // summary_json()'s figures, the actions' included
            }
            nb::dict d;
            d["backend"] = p.pool.backend().caps().name;
            d.attr("update")(json_loads(json));
            d["python_views"] = view_pins_dict(p);
            add_policy_figures(*p.policies, d);
            return d;
          },
          "The pool's statistics as a dict (the JSON of summary_json()): 'tiers' is a list of dicts with name, "
          "kind, policy, capacity, used bytes, evictions, policy_fallbacks (times a Python policy of the tier "
          "failed and lru took over), ...; 'policy_fallbacks' and 'predictor_failures' are the pool's totals; "
          "'python_views' lists the leases that live Python views pin (leases, bytes, pins: tensor, name, bytes, "
          "host, views, released). The eviction actions' figures: evicted_dropped, evicted_moved, "
          "evicted_compressed, evicted_recompute, evicted_recompute_bytes, rebuilds, rebuild_failures, "
          "rebuild_seconds, recipes, recipes_ended.")
      .def(
          "summary",
          [](py_pool const& p) {
            p.check();
            std::string s;
            {
              nb::gil_scoped_release unlocked;
              s = p.pool.summary();
            }
            if (!s.empty() && s.back() != '\n') { s += '\n'; }
            auto const fallbacks = p.policies->failures->fallbacks();
            if (!fallbacks.empty()) {
              tierpool::pool_stats const st = p.pool.stats();
              for (auto const& [k, n] : fallbacks) {
                if (k >= st.tiers.size() || n == 0) { continue; }
                s += "policy of " + st.tiers[k].name + ": the Python policy failed, lru took over (" + std::to_string(n) +
                     " fallback(s))\n";
              }
            }
            if (!p.view_pins.empty()) { s += "pinned by Python views: " + p.describe_view_pins() + "\n"; }
            return s;
          },
          "A human-readable table of the statistics. A tier whose Python policy failed gets a line saying that lru "
          "took over; the last line names the tensors that live Python views pin, when there are any.")
      .def(
          "summary_json",
          [](py_pool const& p) {
            p.check();
            nb::gil_scoped_release unlocked;
            return p.pool.summary_json();
          },
          "The statistics as one JSON object (str).")
      .def(
          "validate",
          [](py_pool const& p) {
            p.check();
            nb::gil_scoped_release unlocked;
            return p.pool.validate();
          },
          "Check every invariant of the pool; True when all hold (violations are logged).")
      .def(
          "create_stream",
          [](py_pool& p, int priority) {
            p.check();
            return static_cast<std::uint64_t>(p.pool.create_stream(priority).value);
          },
          "priority"_a = 0, "Create a stream owned by the pool; returns its handle (an int) for acquire(stream=...).")
      .def(
          "wrap_native_stream",
          [](py_pool& p, std::uintptr_t native) {
            p.check();
            nb::gil_scoped_release unlocked;
            return static_cast<std::uint64_t>(p.pool.wrap_native_stream(reinterpret_cast<void*>(native)).value);
          },
          "native"_a,
          "Use a stream the program made (on CUDA a cudaStream_t as an int: torch.cuda.Stream().cuda_stream, "
          "cupy's Stream.ptr) as a pool stream: acquire(stream=...) orders copies before its work, a lease's end "
          "records its last use there. The program keeps ownership: destroy_stream() the returned handle before "
          "destroying the stream. Wrapping it again returns the same handle. Raises LogicError for a null stream, "
          "one of the pool's own, or one the backend cannot use.")
      .def(
          "destroy_stream",
          [](py_pool& p, std::uint64_t s) {
            p.check();
            nb::gil_scoped_release unlocked;
            p.pool.destroy_stream(tierpool::stream_handle{static_cast<std::uintptr_t>(s)});
          },
          "stream"_a, "Destroy a stream from create_stream() (after its queued work).")
      .def(
          "note_compute",
          [](py_pool& p, std::int64_t duration_ns, std::optional<std::uint64_t> s) {
            p.check();
            if (duration_ns < 0) {
              throw tierpool::logic_error("Pool.note_compute: a negative duration (" + std::to_string(duration_ns) +
                                          " ns)");
            }
            nb::gil_scoped_release unlocked;
            p.pool.note_compute(tierpool::stream_handle{static_cast<std::uintptr_t>(s.value_or(0))},
                                static_cast<std::uint64_t>(duration_ns));
          },
          "duration_ns"_a, "stream"_a.none() = nb::none(),
          "Tell the pool that device work of `duration_ns` was queued on `stream` (None: the default stream) "
          "outside it: the recording (trace_path, TIERPOOL_TRACE) gets a compute event, so that a replay times "
          "the run; on the simulated backend the stream also runs for that long. tierpool.torch.roofline calls "
          "it with each module's modelled time. Raises LogicError for a negative duration or a foreign stream.")
      .def(
          "note_phase",
          [](py_pool& p, std::string const& name) {
            p.check();
            nb::gil_scoped_release unlocked;
            p.pool.note_phase(name);
          },
          "name"_a,
          "Mark the start of a phase ('forward', 'iter 3') in the recording: a phase event, which replays "
          "split their figures by. Nothing when the pool does not record. Raises LogicError for an empty name.")
      .def(
          "synchronize",
          [](py_pool& p, std::optional<std::uint64_t> s) {
            p.check();
            nb::gil_scoped_release unlocked;
            p.pool.synchronize(tierpool::stream_handle{static_cast<std::uintptr_t>(s.value_or(0))});
          },
          "stream"_a.none() = nb::none(), "Block until all work on `stream` (None: the default stream) has completed.")
      .def(
          "residency",
          [](py_pool const& p, py_tensor const& t) {
            p.check();
            tierpool::tensor const& h = live(t);
            tierpool::tensor_residency r;
            {
              nb::gil_scoped_release unlocked;
              r = p.pool.residency(h);
            }
            return residency_dict(r);
          },
          "tensor"_a,
          "Where the tensor lives now, as a dict: home tier, copies (tier, valid, dirty, in_flight, leases), leases, "
          "..., recomputable (it has a recipe: Pool.set_recompute) and dropped_for_recompute (no tier holds its "
          "bytes: its recipe rebuilds them on next use).")
      .def(
          "snapshot_json",
          [](py_pool const& p) {
            p.check();
            nb::gil_scoped_release unlocked;
            return p.pool.snapshot_json();
          },
          "Every live tensor and every tier's blocks at one moment, as JSON (str).")
      .def(
          "create_event",
          [](py_pool& p) {
            p.check();
            nb::gil_scoped_release unlocked;
            return p.pool.create_event();
          },
          "An Event of this pool's streams.")
      .def(
          "order",
          [](py_pool& p, py_tensor const& t, std::uint64_t from, std::uint64_t to) {
            p.check();
            tierpool::tensor const& h = live(t);
            nb::gil_scoped_release unlocked;
            p.pool.order(h, tierpool::stream_handle{static_cast<std::uintptr_t>(from)},
                         tierpool::stream_handle{static_cast<std::uintptr_t>(to)});
          },
          "tensor"_a, "from_stream"_a, "to_stream"_a,
          "Make work on `to_stream` after this call wait for the tensor's use on `from_stream` (a writer on one "
          "stream, a reader on another); the host does not wait.")
      .def(
          "record_stream",
          [](py_pool& p, py_lease const& l, std::uint64_t stream) {
            p.check();
            if (!l.handle.active()) { throw nb::value_error("the lease was released"); }
            nb::gil_scoped_release unlocked;
            p.pool.record_stream(l.handle, tierpool::stream_handle{static_cast<std::uintptr_t>(stream)});
          },
          "lease"_a, "stream"_a,
          "The lease's bytes are also used by work on `stream` (torch's record_stream): the pool neither reuses "
          "nor evicts them before that work is done.")
      .def(
          "add_low_memory_callback",
          [](py_pool& p, nb::callable fn) {
            p.check();
            auto call = std::make_shared<py_callable>(fn);  // Note [Python callables the pool calls]
            return p.pool.add_low_memory_callback([call](tierpool::low_memory_event const& e) {
              nb::gil_scoped_acquire held;
              nb::dict d;
              d["tier"] = static_cast<std::uint32_t>(e.tier);
              d["tier_name"] = std::string(e.tier_name);
              d["bytes_needed"] = e.bytes_needed;
              d["capacity_bytes"] = e.capacity_bytes;
              d["pinned_bytes"] = e.pinned_bytes;
              (*call)(d);
            });
          },
          "fn"_a,
          "Call fn(event) when a request cannot be placed after eviction (the step of the out-of-memory ladder "
          "before OutOfMemory): event is a dict with tier, tier_name, bytes_needed, capacity_bytes, pinned_bytes. "
          "fn may free, demote or release tensors (or drop caches of its own); the request then starts over once. "
          "It runs on the requesting thread; an exception it raises leaves the request. Returns an id for "
          "remove_low_memory_callback.")
      .def(
          "remove_low_memory_callback",
          [](py_pool& p, std::uint64_t id) {
            p.check();
            nb::gil_scoped_release unlocked;
            p.pool.remove_low_memory_callback(id);
          },
          "id"_a, "Unregister a callback (unknown ids are ignored).")
      .def(
          "set_recompute",
          [](py_pool& p, py_tensor const& t, nb::handle fn, nb::handle inputs, bool on_device, double cost_seconds) {
            p.check();
            tierpool::tensor const& h = live(t);
            tierpool::recompute_options o;
            std::vector<std::size_t> input_bytes;  // the recipe's buffers' sizes, in order
            std::shared_ptr<py_callable> recipe_fn;
            for (nb::handle in : inputs) {
              if (!nb::isinstance<py_tensor>(in)) {
                throw nb::type_error("Pool.set_recompute: each input is a Tensor of this pool");
              }
              py_tensor const& it = nb::cast<py_tensor const&>(in);
              if (it.owner != &p) {
                throw tierpool::logic_error("pool::set_recompute: input '" + it.name + "' is a tensor of another pool");
              }
              o.inputs.push_back(live(it).id());
              input_bytes.push_back(live(it).bytes());
            }
            o.on_device = on_device;
            o.cost_seconds = cost_seconds;
            if (!fn.is_none()) {
              if (!PyCallable_Check(fn.ptr())) { throw nb::type_error("Pool.set_recompute: fn is not callable"); }
              // Note [Python callables the pool calls], Note [A recipe's buffers live for one call]
              auto call = std::make_shared<py_callable>(fn);
              recipe_fn = call;
              auto const& caps = p.pool.backend().caps();
              bool const cuda = caps.name == "cuda";
              int const ordinal = caps.device_ordinal;
              bool const real = caps.real_memory;
              py_pool* const pp = &p;
              o.fn = [call, pp, on_device, cuda, ordinal, real, input_bytes](tierpool::recompute_call const& c) {
                nb::gil_scoped_acquire held;
                std::vector<py_recipe_buffer*> bufs;
                std::vector<nb::object> owners;  // bufs stay alive whatever fn does with the call
                auto make_buffer = [&](void const* data, std::size_t nbytes, bool readonly) {
                  py_recipe_buffer b;
                  b.data = const_cast<void*>(data);  // NOLINT(cppcoreguidelines-pro-type-const-cast): read-only views
                  b.bytes = nbytes;
                  b.readonly = readonly;
                  b.device = on_device;
                  b.cuda = cuda;
                  b.device_ordinal = ordinal;
                  b.stream = static_cast<std::uint64_t>(c.stream.value);
                  b.owner = pp;
                  b.real_memory = real;
                  nb::object obj = nb::cast(std::move(b));
                  bufs.push_back(nb::inst_ptr<py_recipe_buffer>(obj));
                  owners.push_back(obj);
                  return obj;
                };
                py_recompute_call rc;
                rc.id = static_cast<std::uint64_t>(c.id);
                rc.bytes = c.bytes;
                rc.tier = static_cast<std::uint32_t>(c.tier);
                rc.stream = static_cast<std::uint64_t>(c.stream.value);
                rc.on_device = on_device;
                rc.out = make_buffer(c.out, c.bytes, false);
                nb::list ins;
                for (std::size_t i = 0; i < c.inputs.size(); ++i) {
                  ins.append(make_buffer(c.inputs[i], i < input_bytes.size() ? input_bytes[i] : 0, true));
                }
                rc.inputs = nb::tuple(ins);
                nb::object const call_obj = nb::cast(std::move(rc));
                auto close_all = [&] {
                  for (py_recipe_buffer* b : bufs) { b->open = false; }
                };
                try {
                  (*call)(call_obj);
                } catch (...) {
                  close_all();
                  throw;
                }
                close_all();
                std::size_t live_views = 0;
                for (py_recipe_buffer const* b : bufs) { live_views += b->exports; }
                if (live_views != 0) {
                  throw nb::buffer_error((std::to_string(live_views) +
                                          " view(s) of the recompute call's buffers outlived the call (tensor " +
                                          std::to_string(static_cast<std::uint64_t>(c.id)) +
                                          "): they would point at memory the pool reuses; delete them before "
                                          "returning. The tensor stays dropped.")
                                             .c_str());
                }
              };
            }
            {
              nb::gil_scoped_release unlocked;
              p.pool.set_recompute(h, std::move(o));
            }
            if (recipe_fn) { p.note_recipe_fn(recipe_fn); }
          },
          "tensor"_a, "fn"_a.none(), "inputs"_a = nb::tuple(), "on_device"_a = false, "cost_seconds"_a = -1.0,
          "Give the tensor a recipe: the pool may then drop its last copy instead of writing it back (when "
          "rebuilding costs less than the round trip, or no lower tier has room) and calls fn(call) to rebuild it "
          "on its next acquire or acquire_host, on that thread, with no pool lock held. call is a RecomputeCall: "
          "write every byte of call.out (a RecipeBuffer) from call.inputs (read-only RecipeBuffers of `inputs`, "
          "Tensors of this pool, in order). on_device: fn gets device-tier bytes and call.stream (enqueue the "
          "work there, do not wait); else host bytes. cost_seconds: one rebuild's cost (< 0: measured). An "
          "exception fn raises leaves the acquire as it is; the tensor stays dropped and can be asked for again. "
          "A lease that may write the tensor or one of its inputs, or freeing an input, ends the recipe (a "
          "dropped tensor is rebuilt first). fn must not set or clear recipes nor free tensors; views of the "
          "buffers must not outlive the call (BufferError). The pool holds fn until the recipe ends or the pool "
          "closes (a fn that refers to the pool keeps it alive until then). Replaces an earlier recipe. Raises LogicError for fn None, more "
          "than 64 inputs, an input that is the tensor itself, not live, has a recipe itself, or a tensor that "
          "is an input of another recipe.")
      .def(
          "clear_recompute",
          [](py_pool& p, py_tensor const& t) {
            p.check();
            tierpool::tensor const& h = live(t);
            nb::gil_scoped_release unlocked;
            p.pool.clear_recompute(h);
          },
          "tensor"_a,
          "End the tensor's recipe, rebuilding it first when it is dropped (fn's exception leaves this call). No-op "
          "without one.")
      .def(
          "enqueue_host",
          [](py_pool& p, std::optional<std::uint64_t> stream, nb::callable fn) {
            p.check();
            py_callable call(fn);
            nb::gil_scoped_release unlocked;
            p.pool.enqueue_host(tierpool::stream_handle{static_cast<std::uintptr_t>(stream.value_or(0))}, std::move(call));
          },
          "stream"_a.none(), "fn"_a,
          "Run fn() on the host in stream order (after the work queued on `stream` so far, before what is queued "
          "after; None: the default stream), on a backend thread that takes the GIL. fn must not call the pool. An "
          "exception it raises is raised again by the next synchronize(stream).")
      .def(
          "set_capacity",
          [](py_pool& p, std::uint32_t tier, std::size_t nbytes) {
            p.check();
            tierpool::capacity_report r;
            {
              nb::gil_scoped_release unlocked;
              r = p.pool.set_capacity(tierpool::tier_id{tier}, nbytes);
            }
            return capacity_dict(r);
          },
          "tier"_a, "nbytes"_a,
          "Grow or shrink tier `tier` to `nbytes` at run time; returns what was done as a dict (reached, why, ...).")
      .def(
          "set_quota",
          [](py_pool& p, std::uint32_t tenant, std::size_t nbytes) {
            p.check();
            p.pool.set_quota(tenant, nbytes);
          },
          "tenant"_a, "nbytes"_a, "Set (or, with 0, remove) a tenant's quota in bytes.")
      .def(
          "compact",
          [](py_pool& p, std::optional<std::uint32_t> tier) {
            p.check();
            tierpool::compact_result r;
            {
              nb::gil_scoped_release unlocked;
              r = p.pool.compact(tier ? std::optional<tierpool::tier_id>(tierpool::tier_id{*tier}) : std::nullopt);
            }
            nb::list tiers;
            for (tierpool::tier_compaction const& t : r.tiers) {
              nb::dict d;
              d["tier"] = t.tier;
              d["moved_tensors"] = t.moved_tensors;
              d["moved_bytes"] = t.moved_bytes;
              d["skipped_tensors"] = t.skipped_tensors;
              d["free_bytes"] = t.free_bytes;
              d["largest_free_before"] = t.largest_free_before;
              d["largest_free_after"] = t.largest_free_after;
              d["fragmentation_before"] = t.fragmentation_before;
              d["fragmentation_after"] = t.fragmentation_after;
              tiers.append(d);
            }
            nb::dict out;
            out["tiers"] = tiers;
            out["moved_tensors"] = r.moved_tensors;
            out["moved_bytes"] = r.moved_bytes;
            return out;
          },
          "tier"_a.none() = nb::none(),
          "Defragment tier `tier` (None: every tier but storage) by moving unleased copies down into free "
          "blocks; returns a dict: per tier moved_tensors, moved_bytes, skipped_tensors, free_bytes, "
          "largest_free_before/after, fragmentation_before/after, and the totals.")
      .def(
          "set_tenant_share",
          [](py_pool& p, std::uint32_t tenant, std::uint32_t tier, std::size_t nbytes) {
            p.check();
            p.pool.set_tenant_share(tenant, tierpool::tier_id{tier}, nbytes);
          },
          "tenant"_a, "tier"_a, "nbytes"_a,
          "Set (or, with 0, remove) a tenant's share of tier `tier` in bytes: evictions there take from tenants over "
          "their share first.")
      .def(
          "set_tenant",
          [](py_pool& p, std::uint32_t tenant, int priority, bool hard_shares) {
            p.check();
            p.pool.set_tenant(tenant, tierpool::tenant_options{.priority = priority, .hard_shares = hard_shares});
          },
          "tenant"_a, "priority"_a = 0, "hard_shares"_a = false,
          "Set a tenant's priority (higher keeps its tensors longer) and whether its shares are hard (a limit and a "
          "reservation).")
      .def(
          "trim",
          [](py_pool& p) {
            p.check();
            nb::gil_scoped_release unlocked;
            return p.pool.trim();
          },
          "Give every empty chunk back to the backend; returns the bytes given back.")
      .def(
          "reset_peak_stats",
          [](py_pool& p) {
            p.check();
            p.pool.reset_peak_stats();
          },
          "Start the peak figures over.")
      .def_prop_ro("tier_count", [](py_pool const& p) { return p.pool.tier_count(); }, "Number of tiers.")
      .def_prop_ro("backend", [](py_pool const& p) { return p.pool.backend().caps().name; },
                   "The backend in use: 'sim' or 'cuda'.")
      .def_prop_ro("backend_reason", [](py_pool const& p) { return p.pool.backend_reason(); },
                   "Why this backend was chosen.")
      .def(
          "close",
          [](py_pool& p) {
            try {
              nb::gil_scoped_release unlocked;
              p.pool.close();
            } catch (tierpool::logic_error const& e) {
              if (p.view_pins.empty()) { throw; }
              throw tierpool::logic_error(std::string(e.what()) + "; Python views pin " + p.describe_view_pins());
            }
            p.drop_recipe_fns();
            p.check();  // closed; a Python policy's failure still surfaces
          },
          "Shut the pool down: wait for copies and free every tier. Raises LogicError while leases live. "
          "Later calls raise LogicError. A Python policy's unraised failure is raised (PolicyError) after closing.")
      .def("__enter__", [](nb::handle self) { return self; }, "Return the pool.")
      .def(
          "__exit__",
          [](py_pool& p, nb::handle exc_type, nb::handle, nb::handle) {
            bool const unwinding = !exc_type.is_none();
            try {
              {
                nb::gil_scoped_release unlocked;
                p.pool.close();
              }
              p.drop_recipe_fns();
            } catch (tierpool::logic_error const& e) {
              // Leases still live while another exception leaves the block: do not hide that
              // one; the pool closes when its last reference (and lease) goes.
              if (!unwinding) {
                if (p.view_pins.empty()) { throw; }
                throw tierpool::logic_error(std::string(e.what()) + "; Python views pin " + p.describe_view_pins());
              }
            }
            if (!unwinding) { p.check(); }  // a Python policy's failure, not over another exception
            return false;
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none(),
          "Close the pool. When the block raised, a close refused because leases live is not raised over that "
          "exception.");

  // ---- module functions ----
  m.def(
      "policies",
      []() {
        nb::list out;
        for (tierpool::policy_info const& info : tierpool::python::registry_with_python_policies().list()) {
          nb::dict d;
          d["name"] = info.name;
          d["description"] = info.description;
          nb::list params;
          for (auto const& prm : info.parameters) {
            nb::dict pd;
            pd["name"] = prm.name;
            pd["type"] = std::string(tierpool::to_string(prm.type));
            pd["default"] = prm.default_value;
            pd["description"] = prm.description;
            params.append(pd);
          }
          d["parameters"] = params;
          out.append(d);
        }
        return out;
      },
      "The eviction policies (built-in and registered Python ones): a list of dicts with name, description and "
      "parameters (each a dict with name, type, default, description).");

  m.def(
      "replay",
      [](std::string const& trace_path, std::vector<nb::object> const& policy_objects, std::string const& capacities,
         std::string const& mode, nb::handle prefetch_object, std::uint32_t loop, unsigned threads, bool activity,
         bool trace_prefetches) {
        tierpool::replay::replay_mode const md = tierpool::replay::parse_replay_mode(mode);
        // Specs for the registry: Python classes are registered in this call's own host.
        auto const host = tierpool::python::make_policy_host();
        std::vector<std::string> policies;
        for (nb::object const& pol : policy_objects) { policies.push_back(host->resolve(pol, false)); }
        std::string const prefetch = host->resolve(prefetch_object, true);
        std::string rows;
        {
          nb::gil_scoped_release unlocked;
          tierpool::replay::compile_options co;
          co.loop = loop;
          co.pool = md == tierpool::replay::replay_mode::pool;
          auto const trace = tierpool::replay::compiled_trace::compile_file(trace_path, {}, co);
          tierpool::replay::grid_options g;
          g.mode = md;
          g.policies = policies;
          g.capacities = tierpool::replay::parse_capacities(capacities);
          g.prefetch = prefetch;
          g.threads = threads;
          g.record_activity = activity && md == tierpool::replay::replay_mode::pool;
          g.trace_prefetches = trace_prefetches;
          g.registry = &host->registry;  // the worker threads take the GIL per Python hook
          // Python hooks run one at a time (the GIL), and threads that hand the GIL to each
          // other on every hook are ten times slower than one thread: by default, a grid
          // with a Python policy or predictor runs on one (an explicit `threads` wins).
          bool python = host->is_python(prefetch, true);
          for (auto const& pol : policies) { python = python || host->is_python(pol, false); }
          if (threads == 0 && python) { g.threads = 1; }
          for (auto const& pol : policies) {
            if (pol == "belady") { g.reference = "belady"; }
          }
          auto const results = tierpool::replay::run_grid(trace, g);
          rows = tierpool::replay::to_json(results);
        }
        host->check();  // a Python policy that failed: its figures are lru's from then on
        return json_loads(rows);
      },
      "trace"_a, "policies"_a = std::vector<std::string>{"lru"}, "capacities"_a = "10%", "mode"_a = "pool",
      "prefetch"_a = nb::str("none"), "loop"_a = 1, "threads"_a = 0, "activity"_a = false,
      "trace_prefetches"_a = true,
      "Replay a trace file (any format tierpool reads) for every policy x capacity, as `tierpool replay` "
      "does. capacities: comma-separated, '10%' of the working set or byte sizes ('64MiB'); threads: 0 = every "
      "hardware thread, or 1 when a Python policy or predictor is in the grid; mode: 'pool', "
      "'cache', 'uvm' or 'uvm-hints'. policies: specs or Python EvictionPolicy classes; prefetch: a spec or a "
      "Python Predictor class. Returns one dict per run, policy-major (keys as `tierpool replay "
      "--json`: policy, capacity, hits, misses, hit_ratio, makespan_seconds, ideal_seconds, bytes_h2d, ...). "
      "Raises TraceError for a bad trace, LogicError for a bad policy or capacity, PolicyError when a Python "
      "policy failed (after the grid ran; its tier fell back to lru). activity=True (pool mode): each row also says "
      "where the device time went, as `tierpool replay --activity`: compute_only_seconds, overlapped_seconds, "
      "exposed_h2d_seconds, exposed_d2h_seconds, exposed_both_seconds, idle_seconds, and 'phases', a list of dicts "
      "with the same keys and 'name' per phase label of the trace; 'iteration_seconds', the device time of "
      "each iteration (from each marker of the first recurring phase label), and 'steady_seconds', their sum "
      "from the second on. trace_prefetches=False (pool mode): the trace's own prefetch events (a recorded "
      "program's prefetch calls) are skipped, as `tierpool replay --no-trace-prefetch`.");

  m.def(
      "_torch_allocator_attach",
      [](nb::handle pool) {
        if (pool.is_none()) {
          tierpool::python::torch_allocator_attach(nullptr);
          return;
        }
        py_pool& p = nb::cast<py_pool&>(pool);
        p.check();
        tierpool::python::torch_allocator_attach(&p.pool);
      },
      "pool"_a.none(),
      "Make `pool` the one tierpool_torch_malloc / tierpool_torch_free (the C entry points of a "
      "CUDAPluggableAllocator) take blocks from (None: none). Use tierpool.torch.mem_pool.");
  m.def(
      "_torch_allocator_stats",
      []() {
        auto const f = tierpool::python::torch_allocator_stats();
        nb::dict d;
        d["live_blocks"] = f.live_blocks;
        d["live_bytes"] = f.live_bytes;
        d["mallocs"] = f.mallocs;
        d["frees"] = f.frees;
        d["failures"] = f.failures;
        d["foreign_frees"] = f.foreign_frees;
        return d;
      },
      "The pluggable allocator's figures: live_blocks, live_bytes, mallocs, frees, failures, foreign_frees.");
  m.def(
      "trace_gen",
      [](std::string const& workload, std::string const& path, std::map<std::string, std::string> const& params,
         std::uint64_t seed) {
        tierpool::trace::generator_params gp(params.begin(), params.end());
        std::uint64_t n = 0;
        nb::gil_scoped_release unlocked;
        tierpool::trace::writer w(path, tierpool::trace::format::automatic);
        tierpool::trace::generate(workload, gp, seed, [&](tierpool::trace::event const& e) {
          w.write(e);
          ++n;
        });
        w.close();
        return n;
      },
      "workload"_a, "path"_a, "params"_a = std::map<std::string, std::string>{}, "seed"_a = 1,
      "Generate a synthetic trace of `workload` ('mlp-train', 'transformer-train', 'llm-infer-stream', "
      "'kv-paging', 'random-reuse') into `path` (binary for a .tpb name, else text), with parameters as "
      "{'layers': '4'} texts; returns the number of events written.");

  m.def(
      "workloads",
      []() {
        nb::list out;
        for (auto const& w : tierpool::trace::workloads()) {
          nb::dict d;
          d["name"] = std::string(w.name);
          d["summary"] = std::string(w.summary);
          d["random"] = w.random;
          nb::dict params;
          for (auto const& prm : w.params) { params[nb::str(std::string(prm.key).c_str())] = std::string(prm.default_value); }
          d["params"] = params;
          nb::dict presets;
          for (auto const& pr : w.presets) { presets[nb::str(std::string(pr.name).c_str())] = std::string(pr.values); }
          d["presets"] = presets;
          out.append(d);
        }
        return out;
      },
      "The workloads trace_gen() knows: a list of dicts with name, summary, random, params (key: default) and "
      "presets (name: 'key=value ...'; trace_gen(w, path, {'preset': name}) uses one, explicit keys override it).");
}
