// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// storage_copy.cpp — copies to and from a storage tier's file (runtime/tiers/storage_file),
// which tiers a copy may make directly and which host tier stages the others, and the
// typed error of a failed storage copy. The rest of the copy engine is copy_engine.cpp.
#include <tierpool/error.hpp>

#include <string>
#include <utility>

#include "migration/migration_engine.hpp"

namespace tierpool::detail {

namespace {

// The last failed storage copy of this thread (storage_copy_locked -> throw_storage_failure).
thread_local storage_io_result t_last_failure{};

}  // namespace

// Note [Storage copies are synchronous]
// -------------------------------------
// Rationale: every other copy is enqueued on a copy stream and its completion is an
// event; the slot it fills is valid at once, and an eviction vacates the copy above right
// after enqueueing the write-back (its block a deferred free behind the copy's event). A
// file write can fail, write fewer bytes or tear; enqueued as stream-ordered host work, its
// failure would be known only after the copy above was vacated, and the tensor's last copy
// lost (Note [A storage write is done before it counts], storage_file.cpp). An I/O queue of
// our own completing an event has the same problem, and would need the eviction, the
// ladder and every caller of copy_locked to learn of copies that fail after they were
// issued.
// Approach: a copy from or into a storage tier's file runs on the calling thread, under
// the record lock, exactly where copy_locked would enqueue: the host first waits for what
// the stream-ordered copy would have waited for (the source's fill and uses, the
// destination block's previous fill and uses), then writes or reads and checks, then the
// destination slot has no pending event (the copy is complete). A failure returns
// io_error before anything changed hands, so every caller's existing failure path (a
// failed write-back keeps the victim resident; a failed copy-in frees the new block) keeps
// the tensor where it was; the diagnosis travels in a thread-local to the storage_error
// thrown.
// Limitations: the thread evicting to storage, or missing from it, blocks for the I/O
// (a prefetch whose source is storage too: it is not "never blocks" there). On a phantom
// backend there is no file: the copy goes to the backend like any other, timed on the
// storage links, and stays stream-ordered.
status migration_engine::storage_copy_locked(tensor_record& rec, std::uint32_t from, std::uint32_t to)
{
  copy_slot& src = rec.slots[from];
  copy_slot& dst = rec.slots[to];
  host_wait_slot(src, true);  // the source's fill and every use (a kernel may still write it)
  host_wait_slot(dst, true);  // a block reused in stream order: its previous copy and uses
  storage_io_result r = tiers_[to]->file ? tiers_[to]->file->write(dst.blk.ptr, src.blk.ptr, rec.bytes, rec.lossy_ok)
                                         : tiers_[from]->file->read(dst.blk.ptr, src.blk.ptr, rec.bytes);
  if (!r.ok) {
    t_last_failure = std::move(r);
    return status::io_error;
  }
  dst.pages_on_device = false;
  count_copy(rec.bytes, from, to);
  return status::ok;
}

bool migration_engine::direct_copy(std::uint32_t from, std::uint32_t to) const noexcept
{
  tier_kind const a = tiers_[from]->kind;
  tier_kind const b = tiers_[to]->kind;
  if (is_storage(a)) { return is_host_accessible(b); }
  if (is_storage(b)) { return is_host_accessible(a); }
  return true;
}

std::uint32_t migration_engine::staging_tier(std::uint32_t a, std::uint32_t b, std::size_t bytes) const
{
  for (std::uint32_t h = 0; h < tiers_.size(); ++h) {
    if (h != a && h != b && is_host_accessible(tiers_[h]->kind) && bytes <= tiers_[h]->capacity) { return h; }
  }
  throw out_of_memory("pool: no host tier can hold " + std::to_string(bytes) + " bytes to stage a copy between tier '" +
                        tiers_[a]->name + "' and tier '" + tiers_[b]->name +
                        "' (device <-> storage copies go through a host tier; raise a host tier's capacity)",
                      tier_id{b}, bytes);
}

void migration_engine::throw_storage_failure(std::string const& what)
{
  storage_io_result const r = std::exchange(t_last_failure, storage_io_result{});
  throw storage_error(r.failure, what + ": " + r.message, r.error_number);
}

}  // namespace tierpool::detail
