// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// uvm_replay.cpp — owns the UVM baseline (detail::run_uvm): a model of CUDA managed
// memory (cudaMallocManaged, demand paging) replaying the pool-mode event array on its own
// virtual timeline, without hints ("uvm") or with the prefetches a careful user adds
// ("uvm-hints"). No pool and no sim backend: a page table per tensor, an LRU list, one
// tail per stream, one for the host, and one per link direction.
//
// Note [The UVM model]
//   Memory: the device holds capacity / page pages; a tensor is a contiguous run of
//   ceil(size / page) pages. A tensor's resident pages are always a prefix [0, resident)
//   and its dirty pages (no valid host copy) a prefix [0, dirty) of those: pages are
//   faulted in bottom up and evicted top down, so two counters per tensor describe it.
//   Kernels: the accesses on a stream before its next compute are that kernel's operands.
//   When the kernel starts (its stream's tail, not before the host launched it) every
//   operand with missing pages faults: one fault group per (kernel, tensor), serviced one
//   after the other while the kernel waits. A group pays the fault cost
//   (run_options::uvm_fault_ns; 25 us by default, from Zheng et al., "Towards High
//   Performance Paged Memory for GPUs", HPCA 2016, who report about 20-50 us per far
//   fault, and Allen & Ge, "In-depth Analyses of Unified Virtual Memory System for GPU
//   Accelerated Computing", SC 2021, whose fault-batch service times are tens of
//   microseconds), then makes room (LRU eviction, write-backs on the d2h
//   link, waited for), then migrates its missing pages in one copy on the h2d link
//   (link latency + pages * page / bandwidth). A tensor never touched since its
//   allocation (without a host tier preference) has no bytes anywhere: its pages are
//   populated on the device by the fault (fault cost, no copy) and are dirty (their only
//   copy is on the device). write_discard migrates like any access (the driver does not
//   know the old bytes are dead). A read_write or write_discard makes the pages dirty.
//   Eviction: whole tensors' pages from the LRU end (the tensor being faulted excluded),
//   top down. The driver keeps one copy of a managed page, so by default every evicted
//   page is migrated back (d2h); with run_options::uvm_drop_clean only dirty pages are
//   copied and clean ones dropped (as if a host copy were kept). Host accesses: the host
//   waits for the kernels that used the tensor, then its device-resident pages migrate
//   to the host (d2h, one copy) and leave the device; the host waits for that copy, and
//   every kernel it launches afterwards starts after it.
//   Hints ("uvm-hints"): for kernel k on stream s, cudaMemPrefetchAsync of each operand is
//   issued on one copy stream when kernel k-1 of s starts (so it overlaps k-1's compute);
//   a prefetch pays no fault cost (bulk: link latency per tensor), makes room by LRU
//   eviction but never evicts the operands of kernel k-1 or k (in use or about to be), its
//   write-backs stall it, and what does not fit is left to demand faults when k starts.
//   Limitations: a kernel whose operands do not fit together evicts its own earlier
//   operands and is not charged the refaults; kernels of other streams are not
//   interrupted by the pages an eviction takes from them, and each stream pays its own
//   fault costs (the driver's one fault worker per GPU is not modelled); a tensor larger than the device
//   is unserved (a miss that moves nothing), as in pool mode; the recorded trace's own
//   prefetch and release events are ignored; the driver's density prefetcher is not
//   modelled.
#include "replay/detail/engines.hpp"

#include <tierpool/error.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tierpool::replay::detail {

namespace {

constexpr std::uint32_t kNil = std::numeric_limits<std::uint32_t>::max();

struct tensor_pages {
  std::uint64_t resident{0};  // pages [0, resident) are on the device
  std::uint64_t dirty{0};     // pages [0, dirty) have no valid host copy (dirty <= resident)
  std::uint64_t kernel{0};    // serial number of the last kernel that used it (0: none)
  tick used_until{0};         // end of that kernel
  std::uint32_t prev{kNil};   // LRU list of tensors with resident pages (head: least recent)
  std::uint32_t next{kNil};
  bool touched{false};  // its bytes exist somewhere (born on the host, or touched since allocated)
  bool listed{false};
};

struct operand {
  std::uint32_t obj;
  std::uint64_t bytes;
  bool write;
};

class uvm_engine {
 public:
  uvm_engine(compiled_data const& d, run_options const& o, bool hints)
      : link_(o.link),
        page_(o.uvm_page_bytes),
        cap_pages_(o.capacity_bytes / o.uvm_page_bytes),
        fault_ns_(static_cast<tick>(std::llround(o.uvm_fault_ns))),
        drop_clean_(o.uvm_drop_clean),
        hints_(hints),
        each_access_is_a_kernel_(d.compute_events == 0),
        t_(d.objects),
        pending_(d.streams),
        tail_(d.streams, 0),
        prev_start_(d.streams, 0),
        launched_(d.streams, 0),
        compute_(d.streams, 0)
  {
  }

  void step(pool_op const& op)
  {
    switch (op.kind) {
      case pool_op_kind::allocate:
        drop(op.obj);
        t_[op.obj].touched = op.tier == 1U;  // a host preference: its bytes start in host memory
        break;
      case pool_op_kind::free:
        flush_pending_of(op.obj);
        drop(op.obj);
        break;
      case pool_op_kind::access:
        out_.bytes_requested += op.bytes;
        if (op.host != 0) {
          host_access(op);
        } else {
          pending_[op.stream].push_back({op.obj, op.bytes, op.mode != trace::access_kind::read});
          if (each_access_is_a_kernel_) { kernel(op.stream, 0); }
        }
        break;
      case pool_op_kind::compute: kernel(op.stream, op.arg); break;
      case pool_op_kind::discard:
        // With hints, the program's discard is cudaMemDiscardBatchAsync: the driver takes the
        // pages back without migrating them, and the next touch (a write_discard) fills new
        // ones without a copy. Plain managed memory has no such call: nothing happens.
        if (hints_) {
          flush_pending_of(op.obj);
          drop(op.obj);
        }
        break;
      case pool_op_kind::prefetch:  // the recorded pool's own prefetches: not the user's
      case pool_op_kind::release: break;
    }
  }

  void finish(replay_result& out)
  {
    for (std::uint32_t s = 0; s < pending_.size(); ++s) {
      if (!pending_[s].empty()) { kernel(s, 0); }
    }
    tick makespan = std::max({host_, h2d_free_, d2h_free_});
    double stall_ns = 0.0;
    for (std::size_t s = 0; s < tail_.size(); ++s) {
      makespan = std::max(makespan, tail_[s]);
      stall_ns += static_cast<double>(tail_[s] - std::min(tail_[s], compute_[s]));
    }
    out.hits = out_.hits;
    out.misses = out_.misses;
    out.unserved = out_.unserved;
    out.bytes_requested = out_.bytes_requested;
    out.bytes_missed = out_.bytes_missed;
    out.bytes_h2d = out_.bytes_h2d;
    out.bytes_d2h = out_.bytes_d2h;
    out.copies_h2d = out_.copies_h2d;
    out.copies_d2h = out_.copies_d2h;
    out.evictions = out_.evictions;
    out.prefetches = out_.prefetches;
    out.stall_seconds = stall_ns * 1e-9;
    out.makespan_seconds = static_cast<double>(makespan) * 1e-9;
  }

 private:
  [[nodiscard]] std::uint64_t pages_of(std::uint64_t bytes) const noexcept
  {
    return bytes / page_ + (bytes % page_ != 0 ? 1 : 0);
  }

  // ---- LRU list of tensors with resident pages ----
  void unlink(std::uint32_t v) noexcept
  {
    tensor_pages& x = t_[v];
    if (!x.listed) { return; }
    (x.prev == kNil ? head_ : t_[x.prev].next) = x.next;
    (x.next == kNil ? tail_lru_ : t_[x.next].prev) = x.prev;
    x.prev = x.next = kNil;
    x.listed = false;
  }
  void touch(std::uint32_t v) noexcept
  {
    unlink(v);
    tensor_pages& x = t_[v];
    if (x.resident == 0) { return; }
    x.prev = tail_lru_;
    (tail_lru_ == kNil ? head_ : t_[tail_lru_].next) = v;
    tail_lru_ = v;
    x.listed = true;
  }

  // A copy of `bytes` on a link that is free from `link_free`, not before `t`: its end.
  tick copy(tick t, tick& link_free, std::uint64_t bytes) const noexcept
  {
    tick const start = std::max(t, link_free);
    link_free = start + link_.transfer_ns(static_cast<std::size_t>(bytes));
    return link_free;
  }

  // Take `k` pages off the top of v's resident pages; the write-back (if any) starts no
  // earlier than `t`, which becomes its end. Counted as evictions when `evict`.
  void take_pages(std::uint32_t v, std::uint64_t k, tick& t, bool evict)
  {
    tensor_pages& x = t_[v];
    std::uint64_t const clean = std::min(k, x.resident - x.dirty);
    std::uint64_t const dirty = k - clean;
    std::uint64_t const back = drop_clean_ ? dirty : k;
    x.resident -= k;
    x.dirty = std::min(x.dirty, x.resident);
    used_ -= k;
    if (evict) { out_.evictions += k; }
    if (back != 0) {
      t = copy(t, d2h_free_, back * page_);
      out_.bytes_d2h += back * page_;
      ++out_.copies_d2h;
    }
    if (x.resident == 0) { unlink(v); }
  }

  // Make room for `need` more pages (LRU victims, `self` excluded; with `protect`, the
  // operands of kernels `k1` and `k2` too). Returns the free pages, which may stay below
  // `need` only with `protect`.
  std::uint64_t make_room(std::uint64_t need, std::uint32_t self, tick& t, bool protect, std::uint64_t k1,
                          std::uint64_t k2)
  {
    std::uint32_t v = head_;
    while (cap_pages_ - used_ < need && v != kNil) {
      std::uint32_t const nxt = t_[v].next;
      bool const in_use = protect && (t_[v].kernel == k1 || t_[v].kernel == k2);
      if (v != self && !in_use) { take_pages(v, std::min(t_[v].resident, need - (cap_pages_ - used_)), t, true); }
      v = nxt;
    }
    return cap_pages_ - used_;
  }

  // Bring `add` pages of `obj` in on top of its resident ones (a copy unless never touched).
  void bring_in(std::uint32_t obj, std::uint64_t add, tick& t)
  {
    tensor_pages& x = t_[obj];
    if (x.touched) {
      t = copy(t, h2d_free_, add * page_);
      out_.bytes_h2d += add * page_;
      ++out_.copies_h2d;
    } else {
      x.dirty = x.resident + add;  // populated on the device: its only copy
    }
    x.resident += add;
    x.touched = true;
    used_ += add;
  }

  void prefetch(std::vector<operand> const& ops, std::uint64_t kprev, std::uint64_t kcur, tick& p)
  {
    for (operand const& a : ops) {
      std::uint64_t const need = pages_of(a.bytes);
      tensor_pages& x = t_[a.obj];
      if (need > cap_pages_ || x.resident >= need) {
        touch(a.obj);
        continue;
      }
      std::uint64_t const room = make_room(need - x.resident, a.obj, p, true, kprev, kcur);
      std::uint64_t const add = std::min(need - x.resident, room);
      if (add != 0) {
        if (x.touched) { ++out_.prefetches; }
        bring_in(a.obj, add, p);
      }
      touch(a.obj);
    }
  }

  void kernel(std::uint32_t s, tick duration)
  {
    std::uint64_t const kcur = ++kernels_;
    std::uint64_t const kprev = launched_[s];
    std::vector<operand>& ops = pending_[s];
    for (operand const& a : ops) { t_[a.obj].kernel = kcur; }
    tick t = std::max(tail_[s], host_);
    if (hints_ && !ops.empty()) {
      // Issued when kernel k-1 of this stream started (now, for the stream's first kernel),
      // on the one copy stream.
      tick p = std::max(kprev == 0 ? t : prev_start_[s], copy_stream_);
      prefetch(ops, kprev, kcur, p);
      copy_stream_ = p;
      t = std::max(t, p);
    }
    for (operand const& a : ops) {
      std::uint64_t const need = pages_of(a.bytes);
      tensor_pages& x = t_[a.obj];
      if (need > cap_pages_) {
        ++out_.unserved;
        ++out_.misses;
        out_.bytes_missed += a.bytes;
        continue;
      }
      if (x.resident >= need) {
        ++out_.hits;
      } else {
        ++out_.misses;
        if (x.touched) { out_.bytes_missed += a.bytes; }
        t += fault_ns_;
        std::uint64_t const add = need - x.resident;
        make_room(add, a.obj, t, false, 0, 0);
        bring_in(a.obj, add, t);
      }
      if (a.write) { x.dirty = std::max(x.dirty, need); }
      touch(a.obj);
    }
    prev_start_[s] = t;
    launched_[s] = kcur;
    tail_[s] = t + duration;
    compute_[s] += duration;
    for (operand const& a : ops) { t_[a.obj].used_until = std::max(t_[a.obj].used_until, tail_[s]); }
    ops.clear();
  }

  void flush_pending_of(std::uint32_t obj)
  {
    for (std::uint32_t s = 0; s < pending_.size(); ++s) {
      auto const& v = pending_[s];
      if (std::any_of(v.begin(), v.end(), [obj](operand const& a) { return a.obj == obj; })) { kernel(s, 0); }
    }
  }

  void host_access(pool_op const& op)
  {
    flush_pending_of(op.obj);
    tensor_pages& x = t_[op.obj];
    host_ = std::max(host_, x.used_until);  // the user synchronizes before touching it
    if (x.resident == 0) {
      ++out_.hits;
    } else {
      ++out_.misses;
      take_pages(op.obj, x.resident, host_, false);
    }
    x.touched = true;
  }

  // The tensor's pages leave the device without a copy (freed, or allocated anew).
  void drop(std::uint32_t obj)
  {
    tensor_pages& x = t_[obj];
    unlink(obj);
    used_ -= x.resident;
    x = tensor_pages{};
  }

  link_model link_;
  std::uint64_t page_;
  std::uint64_t cap_pages_;
  tick fault_ns_;
  bool drop_clean_;
  bool hints_;
  bool each_access_is_a_kernel_;  // a trace without compute events (a cache trace)
  std::vector<tensor_pages> t_;
  std::vector<std::vector<operand>> pending_;  // per stream: the operands of its next kernel
  std::vector<tick> tail_;                     // per stream: when its last kernel ends
  std::vector<tick> prev_start_;               // per stream: when its last kernel started
  std::vector<std::uint64_t> launched_;        // per stream: serial number of its last kernel
  std::vector<std::uint64_t> compute_;         // per stream: compute ns
  std::uint32_t head_{kNil};
  std::uint32_t tail_lru_{kNil};
  std::uint64_t used_{0};  // resident pages
  std::uint64_t kernels_{0};
  tick host_{0};
  tick h2d_free_{0};
  tick d2h_free_{0};
  tick copy_stream_{0};
  replay_result out_{};
};

}  // namespace

}  // namespace tierpool::replay::detail

namespace tierpool::replay {

void check_uvm_options(std::uint64_t page_bytes, double fault_ns)
{
  if (page_bytes < 4096 || !std::has_single_bit(page_bytes)) {
    throw logic_error("replay: the UVM page size must be a power of two of at least 4 KiB (got " +
                      std::to_string(page_bytes) + " bytes)");
  }
  // At most 1 s a fault: 2^32 faults then stay below 2^64 ns (run() refuses past 2^61).
  if (!std::isfinite(fault_ns) || fault_ns < 0.0 || fault_ns > 1e9) {
    throw logic_error("replay: the UVM fault cost must be finite, >= 0 and at most 1 s (got " +
                      std::to_string(fault_ns) + " ns)");
  }
}

}  // namespace tierpool::replay

namespace tierpool::replay::detail {

void run_uvm(compiled_data const& d, run_options const& o, replay_result& out, bool hints)
{
  check_uvm_options(o.uvm_page_bytes, o.uvm_fault_ns);
  if (o.capacity_bytes < o.uvm_page_bytes) {
    throw logic_error("replay: uvm mode needs a capacity of at least one page (" + std::to_string(o.uvm_page_bytes) +
                      " bytes; got " + std::to_string(o.capacity_bytes) + ")");
  }
  uvm_engine e(d, o, hints);
  std::size_t const n = d.ops.size();
  for (std::size_t begin = 0; begin < n; begin += kProgressStride) {
    std::size_t const end = std::min<std::size_t>(n, begin + kProgressStride);
    for (std::size_t i = begin; i < end; ++i) { e.step(d.ops[i]); }
    if (o.progress) { o.progress(end, n); }
  }
  e.finish(out);
}

}  // namespace tierpool::replay::detail
