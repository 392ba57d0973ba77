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

#include <new>

#include "util/record_slab.hpp"

namespace tierpool::detail {

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
