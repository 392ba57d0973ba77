// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// recompute.cpp — tensors rebuilt instead of kept: pool::set_recompute's recipes, the
// rebuild on next use, and the ends of a recipe (a write, an input's write or free,
// clear_recompute). The eviction side (dropping a copy for recompute) is in
// migration/eviction.cpp, Note [Choosing an eviction action].
//
// Note [Recompute as an eviction action]
// --------------------------------------
// Rationale: activations saved for the backward pass are the bulk of a training step's
// memory, and a framework that checkpoints them recomputes them from a few kept inputs
// instead of storing them. A tiered pool that can only move such a tensor down pays a
// write-back and a copy back for bytes the program could rebuild for less, and a program
// that checkpoints by itself cannot let the pool decide per tensor, by what each costs now.
// Approach: pool::set_recompute gives a tensor a recipe (a function, the input tensors it
// reads, a declared or measured cost), kept in the pool's table beside the records
// (recipes_, under the leaf recipes_mtx_), and marks the record (has_recipe) and its
// inputs (recipe_input). Eviction may then drop the tensor's last copy with nothing
// written (needs_rebuild). No lease is granted on a dropped tensor but the rebuild's own:
// acquire and acquire_host find needs_rebuild under the record lock and throw
// rebuild_needed, which never leaves the pool; before locking, with any recipe live
// (recipes_live_, one relaxed load otherwise), prepare_recipes rebuilds it: under the
// recipe's run mutex (one rebuild at a time), with no pool lock held, it leases the
// inputs for reading and the tensor with write_discard (a block, no copy-in) in the
// device tier (on_device recipes, on the asking stream) or a host tier, calls the
// function, clears needs_rebuild and sets rebuilt_fresh, then releases the leases (their
// stream uses order every later reader after the recipe's work). rebuilt_fresh keeps the
// tensor from being dropped again before an acquire uses it, so a request rebuilds at
// most once more (the acquire loops while rebuild_needed comes back, bounded). The
// recipe stays true only while nothing changes the bytes it describes: a lease that may
// write the tensor ends its recipe (write_discard also forgets a drop: every byte is
// overwritten); one on an input, or the input's free, first rebuilds every dropped
// tensor that reads it and then ends their recipes; an input cannot itself have a
// recipe and a tensor with a recipe cannot be an input (no chains, no cycles). Edits of
// the table (set, end) are serialized by recipe_edit_mtx_, taken before any record lock.
// Limitations: the recipe's function must not set, clear or end recipes, nor free
// tensors (it runs under the edit lock on the free and clear paths). A handle destroyed
// without pool::free (noexcept) whose dependents cannot be rebuilt (the recipe throws,
// no room) leaves them dropped with a recipe whose input is gone: their acquire then
// fails with a logic_error naming them (counted in rebuild_failures, logged). Copies of
// a dropped tensor left by a failed rebuild are not read (needs_rebuild gates every read).
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

struct pool_impl::recipe {
  recompute_options opts;
  std::vector<record_ref> inputs;  // kept alive while the recipe lives
  record_ref self;                 // the tensor's record
  std::mutex run_mtx;              // one rebuild at a time
  std::uint64_t runs{0};           // under recipes_mtx_
  double run_seconds{0.0};         // under recipes_mtx_
};

namespace {

constexpr std::size_t kMaxInputs = 64;

// The thread is running a recipe: its own leases skip prepare_recipes.
bool& in_rebuild() noexcept
{
  thread_local bool b = false;
  return b;
}

class rebuild_scope {
 public:
  rebuild_scope() noexcept : was_(std::exchange(in_rebuild(), true)) {}
  ~rebuild_scope() { in_rebuild() = was_; }
  rebuild_scope(rebuild_scope const&) = delete;
  rebuild_scope& operator=(rebuild_scope const&) = delete;

 private:
  bool was_;
};

std::string tensor_text(tensor_record const& rec)
{
  return "tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) + rec.quoted_name();
}

}  // namespace

bool pool_impl::rebuilding() noexcept { return in_rebuild(); }

double pool_impl::recompute_cost(tensor_record const& rec) const noexcept
{
  std::lock_guard g(recipes_mtx_);
  auto const it = recipes_.find(static_cast<std::uint64_t>(rec.id));
  if (it == recipes_.end()) { return -1.0; }
  recipe const& r = *it->second;
  if (r.opts.cost_seconds >= 0.0) { return r.opts.cost_seconds; }
  return r.runs == 0 ? 0.0 : r.run_seconds / static_cast<double>(r.runs);
}

void pool_impl::set_recompute(tensor const& t, recompute_options options)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "set_recompute");
  std::string const what = "pool::set_recompute: " + tensor_text(rec);
  if (!options.fn) { throw logic_error(what + ": no recompute function (recompute_options::fn)"); }
  {
    record_lock rl(rec);
    if (rec.discarded) {  // Note [Discarded contents], tensor_ops.cpp
      throw logic_error(what + ": its bytes were discarded (pool::discard); lease it with write_discard first");
    }
  }
  if (options.inputs.size() > kMaxInputs) {
    throw logic_error(what + ": " + std::to_string(options.inputs.size()) + " inputs (at most " +
                      std::to_string(kMaxInputs) + ")");
  }
  auto r = std::make_shared<recipe>();
  r->self = t.rec_;
  for (tensor_id const id : options.inputs) {
    std::string const in = "input " + std::to_string(static_cast<std::uint64_t>(id));
    if (id == rec.id) { throw logic_error(what + ": " + in + " is the tensor itself"); }
    record_ref ref;
    {
      std::lock_guard lock(table_mtx_);
      if (auto const* p = table_.find(static_cast<std::uint64_t>(id))) { ref = *p; }
    }
    if (ref == nullptr) { throw logic_error(what + ": " + in + " is not a live tensor of this pool"); }
    r->inputs.push_back(std::move(ref));
  }
  r->opts = std::move(options);
  // A dropped tensor is rebuilt by its old recipe first: the new one describes its bytes.
  clear_recompute(t);
  std::lock_guard edit(recipe_edit_mtx_);
  for (record_ref const& in : r->inputs) {
    record_lock il(*in);
    if (in->freed) {
      throw logic_error(what + ": input " + std::to_string(static_cast<std::uint64_t>(in->id)) + " was freed");
    }
    if (in->has_recipe) {
      throw logic_error(what + ": input " + tensor_text(*in) +
                        " has a recipe itself (recipes do not chain: an input is kept, not recomputed)");
    }
  }
  {
    record_lock rl(rec);
    TIERPOOL_EXPECTS(!rec.freed, "pool::set_recompute: the tensor was freed");
    if (rec.recipe_input) {
      throw logic_error(what + " is an input of another tensor's recipe (recipes do not chain: an input is kept, "
                               "not recomputed)");
    }
  }
  {
    std::lock_guard g(recipes_mtx_);
    auto const id = static_cast<std::uint64_t>(rec.id);
    for (record_ref const& in : r->inputs) {
      auto& d = dependents_[static_cast<std::uint64_t>(in->id)];
      if (std::find(d.begin(), d.end(), id) == d.end()) { d.push_back(id); }
    }
    recipes_[id] = r;
    recipes_live_.store(recipes_.size(), std::memory_order_release);
  }
  for (record_ref const& in : r->inputs) {
    record_lock il(*in);
    in->recipe_input = true;
  }
  record_lock rl(rec);
  rec.has_recipe = true;
}

bool pool_impl::end_recipe(tensor_record& rec, bool discard)
{
  auto const id = static_cast<std::uint64_t>(rec.id);
  {
    record_lock rl(rec);
    if (!rec.has_recipe) { return true; }
    if (rec.needs_rebuild && !discard) { return false; }  // dropped again: the caller rebuilds first
    rec.has_recipe = false;
    rec.rebuilt_fresh = false;
    rec.needs_rebuild = false;
  }
  std::vector<record_ref> no_longer_inputs;
  {
    std::lock_guard g(recipes_mtx_);
    auto const it = recipes_.find(id);
    if (it != recipes_.end()) {
      for (record_ref const& in : it->second->inputs) {
        auto const d = dependents_.find(static_cast<std::uint64_t>(in->id));
        if (d == dependents_.end()) { continue; }
        std::erase(d->second, id);
        if (d->second.empty()) {
          dependents_.erase(d);
          no_longer_inputs.push_back(in);
        }
      }
      recipes_.erase(it);
    }
    recipes_live_.store(recipes_.size(), std::memory_order_release);
  }
  counters_.recipes_ended.fetch_add(1, std::memory_order_relaxed);
  for (record_ref const& in : no_longer_inputs) {
    record_lock il(*in);
    in->recipe_input = false;
  }
  return true;
}

void pool_impl::clear_recompute(tensor const& t)
{
  op_gate::scope const op(gate_, thread_shard());
  tensor_record& rec = checked_record(t, "clear_recompute");
  std::lock_guard edit(recipe_edit_mtx_);
  while (!end_recipe(rec, false)) { rebuild(rec, {}, true); }
}

void pool_impl::end_dependents(tensor_record& rec)
{
  std::vector<record_ref> deps;
  {
    std::lock_guard g(recipes_mtx_);
    auto const d = dependents_.find(static_cast<std::uint64_t>(rec.id));
    if (d == dependents_.end()) { return; }
    for (std::uint64_t const id : d->second) {
      auto const it = recipes_.find(id);
      if (it != recipes_.end()) { deps.push_back(it->second->self); }
    }
  }
  for (record_ref const& dep : deps) {
    while (!end_recipe(*dep, false)) { rebuild(*dep, {}, true); }
  }
}

void pool_impl::prepare_recipes(tensor_record& rec, access_mode access, stream_handle stream, bool host)
{
  if (in_rebuild()) { return; }  // the recipe's own leases
  bool const write = access != access_mode::read;
  bool dropped = false;
  bool own = false;
  bool input = false;
  {
    record_lock rl(rec);
    dropped = rec.needs_rebuild;
    own = rec.has_recipe;
    input = rec.recipe_input;
  }
  if (!dropped && !(write && (own || input))) { return; }
  if (write) {
    std::lock_guard edit(recipe_edit_mtx_);
    if (input) { end_dependents(rec); }
    // A lease that overwrites every byte needs no rebuild; read_write reads them first.
    while (!end_recipe(rec, access == access_mode::write_discard)) { rebuild(rec, stream, host); }
    return;
  }
  rebuild(rec, stream, host);
}

void pool_impl::rebuild(tensor_record& rec, stream_handle stream, bool host)
{
  std::shared_ptr<recipe> r;
  {
    std::lock_guard g(recipes_mtx_);
    auto const it = recipes_.find(static_cast<std::uint64_t>(rec.id));
    if (it != recipes_.end()) { r = it->second; }
  }
  if (r == nullptr) {
    record_lock rl(rec);
    if (!rec.needs_rebuild) { return; }
    throw logic_error("pool: " + tensor_text(rec) + " was dropped for recompute and its recipe is gone");
  }
  std::lock_guard run(r->run_mtx);
  {
    record_lock rl(rec);
    if (!rec.needs_rebuild) { return; }  // another thread rebuilt it meanwhile
  }
  rebuild_scope const scope;
  bool const dev = r->opts.on_device;
  stream_handle const s = dev && !host ? stream : stream_handle{};  // from acquire_host: the default stream
  std::vector<lease> ins;
  ins.reserve(r->inputs.size());
  recompute_call call;
  call.id = rec.id;
  call.bytes = rec.bytes;
  call.stream = s;
  for (record_ref const& in : r->inputs) {
    {
      record_lock il(*in);
      if (in->freed) {
        throw logic_error("pool: cannot rebuild " + tensor_text(rec) + ": its input " +
                          std::to_string(static_cast<std::uint64_t>(in->id)) + " was freed");
      }
    }
    ins.push_back(dev ? acquire_record(*in, &in, access_mode::read, s) : acquire_host_record(*in, &in, access_mode::read));
    call.inputs.push_back(ins.back().data());
  }
  lease out = dev ? acquire_record(rec, &r->self, access_mode::write_discard, s)
                  : acquire_host_record(rec, &r->self, access_mode::write_discard);
  call.out = out.data();
  call.tier = tier_id{out.tier_};
  auto const t0 = std::chrono::steady_clock::now();
  try {
    r->opts.fn(call);
  } catch (...) {
    counters_.rebuild_failures.fetch_add(1, std::memory_order_relaxed);
    throw;  // the leases end; needs_rebuild stays: no read sees the block's bytes
  }
  double const secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    record_lock rl(rec);
    rec.needs_rebuild = false;
    rec.rebuilt_fresh = true;
  }
  {
    std::lock_guard g(recipes_mtx_);
    ++r->runs;
    r->run_seconds += secs;
  }
  counters_.rebuilds.fetch_add(1, std::memory_order_relaxed);
  counters_.rebuild_ns.fetch_add(static_cast<std::uint64_t>(secs * 1e9), std::memory_order_relaxed);
}

void pool_impl::free_recipes(tensor_record& rec, bool may_throw)
{
  bool own = false;
  bool input = false;
  {
    record_lock rl(rec);
    own = rec.has_recipe;
    input = rec.recipe_input;
  }
  if (!own && !input) { return; }
  std::lock_guard edit(recipe_edit_mtx_);
  try {
    if (input) { end_dependents(rec); }
    if (own) { (void)end_recipe(rec, true); }  // its bytes go anyway
  } catch (...) {
    if (may_throw) { throw; }
    counters_.rebuild_failures.fetch_add(1, std::memory_order_relaxed);
    log_message(log_level::error, "tierpool: freeing " + tensor_text(rec) +
                                    ": a tensor recomputed from it could not be rebuilt first; it stays dropped");
  }
}

}  // namespace tierpool::detail
