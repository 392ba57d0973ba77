// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_loss.cpp — owns what the pool does when its device is lost (status::device_lost,
// tierpool::device_lost) and the completion of write-through copies.
//
// Note [A lost device]
// A sticky device error (on CUDA an illegal address, a kernel that faulted, an
// uncorrectable ECC error) ends the device: its memory is gone and every later call on it
// fails. The first pool call that sees status::device_lost (as a backend_error thrown from
// its copy, growth or synchronization) enters the lost state, once, with no lock held:
//   - every live tensor whose only valid copy was in device-accessible memory (device,
//     managed) or in a host tier still being filled by a copy the pool had not seen
//     complete is marked lost; the others have a complete host copy and survive;
//   - that call, and every later call that needs the device (allocate, acquire, demote,
//     synchronize) or a lost tensor (acquire_host), throws tierpool::device_lost naming
//     the lost tensors; prefetch does nothing;
//   - acquire_host and free of a survivor, stats(), summary() and close() keep working.
//     The backend's failing calls return at once (nothing waits on a dead device), so
//     close() frees the pool without hanging.
// A write-through tensor (tensor_options::write_through) has its host copy rewritten at
// every write lease's release; pool::synchronize waits for those copies, so after it
// returns they survive a loss. Calls that do not throw (release, prefetch, free) ignore
// the status; the next call that throws finds the loss.
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

void pool_impl::note_backend_error(backend_error const& e)
{
  if (e.code() != status::device_lost || dynamic_cast<device_lost const*>(&e) != nullptr) { return; }
  if (!lost_.load(std::memory_order_acquire)) {
    // Walk without lost_mtx_ (a leaf: acquire_host takes it under a record lock). Two
    // threads may both walk; the first to publish wins, and both mark the same records.
    std::vector<tensor_id> ids;
    std::vector<std::string> names;
    for (auto const& rp : records_by_id()) {
      record_lock rl(*rp);
      tensor_record& rec = *rp;
      if (rec.freed) { continue; }
      bool survives = false;
      for (std::uint32_t j = 0; j < rec.slots.size() && !survives; ++j) {
        copy_slot const& s = rec.slots[j];
        survives = !is_device_accessible(engine_.tiers()[j]->kind) && s.state == copy_state::valid && !s.ready;
      }
      if (!survives) {
        rec.lost = true;
        ids.push_back(rec.id);
        names.emplace_back(rec.name());
      }
    }
    bool first = false;
    std::size_t const count = ids.size();
    {
      std::lock_guard lk(lost_mtx_);
      if (!lost_.load(std::memory_order_relaxed)) {
        lost_ids_ = std::move(ids);
        lost_names_ = std::move(names);
        lost_cause_ = e.what();
        lost_.store(true, std::memory_order_release);
        first = true;
      }
    }
    if (first) {  // no lock held: the sink may call the pool
      log_message(log_level::error, std::string("tierpool: the device was lost (") + e.what() + "); " +
                                      std::to_string(count) +
                                      " tensor(s) lost with it; close the pool, the others keep their host copies");
    }
  }
  std::lock_guard lk(lost_mtx_);
  throw device_lost(std::string("tierpool: the device was lost: ") + e.what(), lost_ids_, lost_names_);
}

void pool_impl::throw_lost(char const* what) const
{
  std::lock_guard lk(lost_mtx_);
  throw device_lost(std::string("pool::") + what + ": the device was lost earlier (" + lost_cause_ + ")", lost_ids_,
                    lost_names_);
}

void pool_impl::flush_write_throughs() noexcept
{
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lk(wt_mtx_);
    ids.swap(wt_pending_);
  }
  for (std::uint64_t const id : ids) {
    record_ref rec;
    {
      std::lock_guard lock(table_mtx_);
      if (auto const* r = table_.find(id)) { rec = *r; }
    }
    if (rec == nullptr) { continue; }
    record_lock rl(*rec);
    for (std::uint32_t j = 0; j < rec->slots.size(); ++j) {
      copy_slot& s = rec->slots[j];
      if (is_device_accessible(engine_.tiers()[j]->kind) || !s.ready) { continue; }
      if (backend_->synchronize_event(s.ready) == status::ok) {
        streams_->release_event(s.ready);
        s.ready = event_handle{};
      }
    }
  }
}

}  // namespace tierpool::detail
