// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lfu_policy.cpp — owns tierpool::lfu_policy (the O(1) frequency-bucket structure of Shah,
// Mitra and Matani over two slabs, pin handling, sized proposals) and its registration as
// "lfu" (register_lfu). See lfu_policy.hpp for the algorithm.
#include "lfu_policy.hpp"

#include <limits>

#include <tierpool/policies/slab_list.hpp>
#include <tierpool/policies/saturating.hpp>

namespace tierpool {

lfu_policy::lfu_policy() noexcept : lfu_policy(config{}) {}

lfu_policy::lfu_policy(config cfg) noexcept : cfg_(cfg) {}

std::uint64_t lfu_policy::frequency(tensor_id id) const noexcept
{
  index_t const i = find(id);
  return i == npos ? 0 : buckets_[nodes_[i].bucket].freq;
}

void lfu_policy::link_item(index_t b, index_t i) noexcept
{
  bucket& bk = buckets_[b];
  node& n = nodes_[i];
  n.next = npos;
  n.prev = bk.back;
  if (bk.back != npos) {
    nodes_[bk.back].next = i;
  } else {
    bk.front = i;
  }
  bk.back = i;
  ++bk.items;
}

void lfu_policy::unlink_item(index_t b, index_t i) noexcept
{
  bucket& bk = buckets_[b];
  node& n = nodes_[i];
  if (n.prev != npos) {
    nodes_[n.prev].next = n.next;
  } else {
    bk.front = n.next;
  }
  if (n.next != npos) {
    nodes_[n.next].prev = n.prev;
  } else {
    bk.back = n.prev;
  }
  n.prev = npos;
  n.next = npos;
  --bk.items;
}

void lfu_policy::attach(index_t b, index_t i) noexcept
{
  nodes_[i].bucket = b;
  if (nodes_[i].pinned) {
    ++buckets_[b].pinned;
  } else {
    link_item(b, i);
  }
}

void lfu_policy::detach(index_t i) noexcept
{
  index_t const b = nodes_[i].bucket;
  if (nodes_[i].pinned) {
    --buckets_[b].pinned;
  } else {
    unlink_item(b, i);
  }
  nodes_[i].bucket = npos;
  if (buckets_[b].items == 0 && buckets_[b].pinned == 0) { free_bucket(b); }
}

lfu_policy::index_t lfu_policy::bucket_after(index_t b, std::uint64_t freq) noexcept
{
  index_t const nb = b == npos ? lowest_ : buckets_[b].next;
  if (nb != npos && buckets_[nb].freq == freq) { return nb; }
  index_t fresh = free_bucket_;
  if (fresh != npos) {
    free_bucket_ = buckets_[fresh].next;
  } else {
    fresh = static_cast<index_t>(buckets_.size());
    buckets_.emplace_back();  // grows to the number of distinct frequencies, then never
  }
  buckets_[fresh] = bucket{freq, b, nb, npos, npos, 0, 0};
  if (b != npos) {
    buckets_[b].next = fresh;
  } else {
    lowest_ = fresh;
  }
  if (nb != npos) { buckets_[nb].prev = fresh; }
  ++bucket_count_;
  return fresh;
}

void lfu_policy::free_bucket(index_t b) noexcept
{
  bucket& bk = buckets_[b];
  if (bk.prev != npos) {
    buckets_[bk.prev].next = bk.next;
  } else {
    lowest_ = bk.next;
  }
  if (bk.next != npos) { buckets_[bk.next].prev = bk.prev; }
  bk = bucket{};
  bk.next = free_bucket_;
  free_bucket_ = b;
  --bucket_count_;
}

void lfu_policy::bump(index_t i) noexcept
{
  index_t const b = nodes_[i].bucket;
  std::uint64_t const f = buckets_[b].freq;
  if (f == std::numeric_limits<std::uint64_t>::max()) {  // saturated: only refresh recency
    if (!nodes_[i].pinned) {
      unlink_item(b, i);
      link_item(b, i);
    }
    return;
  }
  // Take the target bucket before detaching: b may be freed by detach, and the new bucket
  // must be linked after it.
  index_t const target = bucket_after(b, f + 1);
  detach(i);
  attach(target, i);
}

void lfu_policy::order_leave(index_t i) noexcept
{
  index_t const b = nodes_[i].bucket;
  unlink_item(b, i);
  ++buckets_[b].pinned;
}

void lfu_policy::order_enter(index_t i) noexcept
{
  index_t const b = nodes_[i].bucket;
  --buckets_[b].pinned;
  link_item(b, i);
}

void lfu_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = find(v.id); i != npos) {  // known: update and count as an access
    set_bytes(i, v.bytes);
    set_pinned(i, v.pinned);
    bump(i);
    return;
  }
  index_t const i = admit(v);  // noexcept hook: terminates if out of memory
  attach(bucket_after(npos, 1), i);
}

void lfu_policy::access(index_t i, tensor_view const& v) noexcept
{
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);
  bump(i);
}

void lfu_policy::erase(index_t i) noexcept
{
  index_.erase(nodes_[i].id);  // first, while its cell is hot
  detach(i);
  free_slot(i);
}

void lfu_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t freed = 0;
  for (index_t b = lowest_; b != npos && freed < req.bytes_needed; b = buckets_[b].next) {
    for (index_t i = buckets_[b].front; i != npos && freed < req.bytes_needed; i = nodes_[i].next) {
      out.add(nodes_[i].id, nodes_[i].bytes);
      freed = policies::detail::saturating_add(freed, nodes_[i].bytes);
    }
  }
}

bool lfu_policy::order_ok(std::size_t& held) const noexcept
{
  std::size_t items = 0;
  std::size_t pinned = 0;
  std::size_t linked = 0;
  index_t prev_b = npos;
  for (index_t b = lowest_; b != npos; b = buckets_[b].next) {
    if (b >= buckets_.size() || linked > buckets_.size()) { return false; }
    bucket const& bk = buckets_[b];
    if (bk.prev != prev_b || (bk.items == 0 && bk.pinned == 0)) { return false; }
    if (prev_b != npos && buckets_[prev_b].freq >= bk.freq) { return false; }
    std::size_t count = 0;
    index_t prev = npos;
    for (index_t i = bk.front; i != npos; i = nodes_[i].next) {
      if (i >= nodes_.size() || count > nodes_.size()) { return false; }
      node const& n = nodes_[i];
      if (!n.live || n.pinned || n.bucket != b || n.prev != prev) { return false; }
      prev = i;
      ++count;
    }
    if (bk.back != prev || bk.items != count) { return false; }
    items += count;
    pinned += bk.pinned;
    prev_b = b;
    ++linked;
  }
  if (linked != bucket_count_ || pinned != pinned_.count) { return false; }
  for (node const& n : nodes_) {
    if (n.live && n.bucket >= buckets_.size()) { return false; }
  }
  std::size_t free_buckets = 0;
  for (index_t b = free_bucket_; b != npos; b = buckets_[b].next) {
    if (b >= buckets_.size() || free_buckets > buckets_.size()) { return false; }
    ++free_buckets;
  }
  held = items;
  return linked + free_buckets == buckets_.size();
}

namespace policies {

void register_lfu(policy_registry& registry)
{
  registry.add("lfu",
               "Least frequently used first, least recently used among equals (O(1) frequency buckets, Shah et al. 2010)",
               {}, [](policy_params const&) { return any_eviction_policy{lfu_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool
