// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// records.cpp — a record's references (record_ref) and where records come from.
//
// Note [Records count their references]
// -------------------------------------
// Rationale: a record is shared by its handle, the pool's table and work in flight
// (eviction holds a victim's, the planner a forecast tensor's). As a std::shared_ptr that
// cost a control block per tensor (32 bytes, and one more cold cache line for every
// eviction victim, whose reference the round copies) and 16 bytes per reference (the table
// cell, the handle).
// Approach: the count is a 32-bit atomic in the record (in the header's padding), and
// record_ref is one pointer: copying increments it (relaxed: a new reference comes from
// an existing one), dropping decrements it (acq_rel: the last drop sees every write made
// through the others) and the last drop destroys the record and returns it to the
// process's slab. Weak references (the prefetch queue, the planner's list of written
// tensors) became tensor ids looked up in the table when used: a record is in the table
// exactly while its tensor is live, which is what those callers asked weak_ptr::lock().
// Limitations: at most 2^32 - 1 references to one record (one per handle, table cell and
// operation in flight).
#include "migration/records.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include <tierpool/error.hpp>

#include "util/record_slab.hpp"

namespace tierpool::detail {

// Note [A record names its pool in two bytes]
// -------------------------------------------
// Rationale: a record needs its pool on rare paths only: the last release of a tensor whose
// handle died (the deferred free), a name for a message, and the check that a handle
// belongs to the pool it is given to. A pointer in every record cost 8 bytes a tensor.
// Approach: pools register in a process-wide table of 65,535 entries (the index of a
// pool's entry is free again when the pool is gone: its records are gone before it, as
// the handles that keep records hold the pool too); a record keeps the 16-bit index.
// A lookup is one relaxed load; registering takes a mutex, once per pool.
// Limitations: at most 65,535 pools alive at once in a process (the 65,536th construction
// throws logic_error); the table is 512 KiB of address space, of which only the pages of
// entries used are ever touched.
namespace {

struct owner_registry {
  std::array<std::atomic<record_owner*>, 65536> owners{};  // [0] unused: "no owner"
  std::mutex mtx;                                          // guards the two below
  std::vector<std::uint16_t> free;                         // indices given back
  std::uint32_t next{1};                                   // never used yet
};

owner_registry& registry()
{
  static owner_registry* const r = new owner_registry();  // NOLINT: immortal (records of static pools)
  return *r;
}

}  // namespace

std::uint16_t register_owner(record_owner* o)
{
  owner_registry& r = registry();
  std::uint16_t i = 0;
  {
    std::lock_guard g(r.mtx);
    if (!r.free.empty()) {
      i = r.free.back();
      r.free.pop_back();
    } else if (r.next < r.owners.size()) {
      i = static_cast<std::uint16_t>(r.next++);
    } else {
      throw logic_error("pool: 65535 pools are alive in this process, the most it can hold; close some first");
    }
  }
  r.owners[i].store(o, std::memory_order_release);
  return i;
}

void unregister_owner(std::uint16_t i) noexcept
{
  if (i == 0) { return; }
  owner_registry& r = registry();
  r.owners[i].store(nullptr, std::memory_order_release);
  std::lock_guard g(r.mtx);
  try {
    r.free.push_back(i);
  } catch (...) {  // bad_alloc: the index is lost to the process, nothing else
  }
}

record_owner* owner_at(std::uint16_t i) noexcept { return registry().owners[i].load(std::memory_order_acquire); }

void record_retain(tensor_record* r) noexcept { r->refs.fetch_add(1, std::memory_order_relaxed); }

void record_release(tensor_record* r) noexcept
{
  if (r->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) { return; }
  r->~tensor_record();
  process_slab<tensor_record>().deallocate(r);
}

record_ref make_record_ref()
{
  void* const mem = process_slab<tensor_record>().allocate();  // may throw: nothing to undo
  auto* const r = new (mem) tensor_record();                    // no member throws on default construction
  r->refs.store(1, std::memory_order_relaxed);
  return record_ref::adopt(r);
}

}  // namespace tierpool::detail
