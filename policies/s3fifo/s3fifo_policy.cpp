// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// s3fifo_policy.cpp — owns tierpool::s3fifo_policy (S, M and G over one slab, the scan
// pointers, the simulated eviction loop in propose, the moves applied on erase) and its
// registration as "s3fifo" (register_s3fifo). See s3fifo_policy.hpp for the algorithm and
// Note [S3-FIFO moves on erase].
#include "s3fifo_policy.hpp"

#include <cmath>
#include <string>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {
namespace {

// The paper's Algorithm 1: an S tail with freq > 1 moves to M.
constexpr std::uint8_t kMoveToMainAbove = 1;

}  // namespace

s3fifo_policy::s3fifo_policy() noexcept : cfg_{} {}

s3fifo_policy::s3fifo_policy(config cfg) : cfg_(cfg)
{
  TIERPOOL_EXPECTS(std::isfinite(cfg.small_ratio) && cfg.small_ratio > 0.0 && cfg.small_ratio < 1.0,
                   "s3fifo: small_ratio must be in (0, 1) (the paper uses 0.1), got " + std::to_string(cfg.small_ratio));
  TIERPOOL_EXPECTS(std::isfinite(cfg.ghost_ratio) && cfg.ghost_ratio >= 0.0 && cfg.ghost_ratio <= 16.0,
                   "s3fifo: ghost_ratio must be in [0, 16] (the paper uses 0.9), got " + std::to_string(cfg.ghost_ratio));
}

void s3fifo_policy::link_back(list& l, index_t i) noexcept
{
  policies::detail::link_back(nodes_, l, i);
  if (&l == &main_) { ++m_freq_count_[nodes_[i].freq]; }
}

void s3fifo_policy::unlink(list& l, index_t i) noexcept
{
  policies::detail::unlink(nodes_, l, i);
  if (&l == &main_) { --m_freq_count_[nodes_[i].freq]; }
}

bool s3fifo_policy::in_main(tensor_id id) const noexcept
{
  index_t const i = resident_slot(id);
  return i != npos && nodes_[i].q == queue::main;
}

std::uint8_t s3fifo_policy::frequency(tensor_id id) const noexcept
{
  index_t const i = resident_slot(id);
  return i == npos ? std::uint8_t{0} : nodes_[i].freq;
}

// "if S.size >= 0.1 * cache size then evictS else evictM", the cache being S + M here;
// the non-empty queue when the other is empty.
bool s3fifo_policy::evict_from_small(list const& small, list const& main) const noexcept
{
  if (small.count == 0) { return false; }
  if (main.count == 0) { return true; }
  return small.wide() >= cfg_.small_ratio * (small.wide() + main.wide());
}

s3fifo_policy::index_t s3fifo_policy::first_cold(index_t from) const noexcept
{
  for (index_t i = from; i != npos; i = nodes_[i].next) {
    if (nodes_[i].freq <= kMoveToMainAbove) { return i; }
  }
  return npos;
}

s3fifo_policy::index_t s3fifo_policy::first_zero(index_t from) const noexcept { return first_with_freq(from, 0); }

s3fifo_policy::index_t s3fifo_policy::first_with_freq(index_t from, std::uint8_t f) const noexcept
{
  for (index_t i = from; i != npos; i = nodes_[i].next) {
    if (nodes_[i].freq == f) { return i; }
  }
  return npos;
}

std::uint8_t s3fifo_policy::main_min_freq() const noexcept
{
  for (std::uint8_t f = 0; f <= max_frequency; ++f) {
    if (m_freq_count_[f] != 0) { return f; }
  }
  return max_frequency;
}

// The tensor the next eviction removes; see Note [S3-FIFO moves on erase]. *promote_all is
// set when S is examined first but holds no tensor with freq <= 1: all of S moves to M and
// the victim comes from M.
s3fifo_policy::index_t s3fifo_policy::next_victim(bool* promote_all) const noexcept
{
  *promote_all = false;
  if (evict_from_small(small_, main_)) {
    if (s_cold_ != npos) { return s_cold_; }
    *promote_all = true;
    // M then S (in that order at M's head): the first tensor with the lowest frequency.
    std::uint8_t low = main_.count != 0 ? main_min_freq() : max_frequency;
    for (index_t i = small_.front; i != npos; i = nodes_[i].next) {
      if (nodes_[i].freq < low) { low = nodes_[i].freq; }
    }
    index_t const m = first_with_freq(main_.front, low);
    return m != npos ? m : first_with_freq(small_.front, low);
  }
  if (main_.count == 0) { return npos; }
  if (m_zero_ != npos) { return m_zero_; }
  return first_with_freq(main_.front, main_min_freq());
}

void s3fifo_policy::enter(index_t i) noexcept
{
  node& n = nodes_[i];
  if (n.q == queue::small) {
    link_back(small_, i);
    if (s_cold_ == npos && n.freq <= kMoveToMainAbove) { s_cold_ = i; }
  } else {
    link_back(main_, i);
    if (m_zero_ == npos && n.freq == 0) { m_zero_ = i; }
  }
}

void s3fifo_policy::leave(index_t i) noexcept
{
  node const& n = nodes_[i];
  if (n.q == queue::small) {
    if (i == s_cold_) { s_cold_ = first_cold(n.next); }
    unlink(small_, i);
  } else {
    if (i == m_zero_) { m_zero_ = first_zero(n.next); }
    unlink(main_, i);
  }
}

void s3fifo_policy::promote(index_t i) noexcept
{
  // Only for S tensors before s_cold_ (freq > 1): s_cold_ does not change, and M's new
  // head has freq > 0, so m_zero_ does not either.
  unlink(small_, i);
  nodes_[i].q = queue::main;
  link_back(main_, i);
}

void s3fifo_policy::commit_evict(index_t i, bool promote_all) noexcept
{
  node& x = nodes_[i];
  if (!promote_all && x.q == queue::small) {  // evictS: the tensors before x move to M; x's id goes to G
    while (small_.front != i) { promote(small_.front); }
    s_cold_ = first_cold(x.next);
    unlink(small_, i);
    x.q = queue::ghost;
    link_back(ghost_, i);
    trim_ghosts();
    return;
  }
  if (promote_all) {  // evictS found no victim: all of S is now at M's head
    while (small_.front != npos) { promote(small_.front); }
    s_cold_ = npos;
  }
  // evictM: x is the first M tensor with the lowest frequency f. Each of f full passes
  // lowers every frequency by one and keeps the order; the last pass reinserts the
  // tensors before x at the head with one less, then evicts x.
  std::uint8_t const f = x.freq;
  if (f != 0) {
    for (index_t j = main_.front; j != npos; j = nodes_[j].next) { nodes_[j].freq = static_cast<std::uint8_t>(nodes_[j].freq - f); }
    m_freq_count_ = {};
    for (index_t j = main_.front; j != npos; j = nodes_[j].next) { ++m_freq_count_[nodes_[j].freq]; }
  }
  while (main_.front != i) {
    index_t const j = main_.front;
    unlink(main_, j);
    --nodes_[j].freq;  // > 0: x is the first with the lowest frequency
    link_back(main_, j);
  }
  index_t const after = x.next;
  unlink(main_, i);
  m_zero_ = first_zero(after);  // the reinserted ones are behind `after`
  release(i);
}

void s3fifo_policy::trim_ghosts() noexcept
{
  policies::detail::drop_front_while_over(nodes_, ghost_, cfg_.ghost_ratio * (small_.wide() + main_.wide()),
                                          [this](index_t g) { release(g); });
}

void s3fifo_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = find(v.id); i != npos) {
    node& n = nodes_[i];
    if (n.q != queue::ghost) {  // resident: an access
      on_access(v);
      return;
    }
    unlink(ghost_, i);  // a miss on a remembered id: into M
    n.bytes = v.bytes;
    n.q = queue::main;
    n.freq = 0;
    if (v.pinned) {
      adopt_pinned(i);
    } else {
      enter(i);
    }
    return;
  }
  index_t const i = admit(v);  // into S, frequency 0; hooks are noexcept: terminate if out of memory
  if (!v.pinned) { enter(i); }
}

void s3fifo_policy::access(index_t i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);
  if (n.freq == max_frequency) { return; }
  if (n.pinned) {
    ++n.freq;
    return;
  }
  if (n.q == queue::main) { --m_freq_count_[n.freq]; }
  ++n.freq;
  if (n.q == queue::main) {
    ++m_freq_count_[n.freq];
    if (i == m_zero_) { m_zero_ = first_zero(n.next); }
  } else if (i == s_cold_ && n.freq > kMoveToMainAbove) {
    s_cold_ = first_cold(n.next);
  }
}

void s3fifo_policy::erase(index_t i) noexcept
{
  node const& n = nodes_[i];
  if (n.pinned) {
    release(i);
    return;
  }
  // See Note [S3-FIFO moves on erase]. Cheap filters first: an S victim is s_cold_; an M
  // victim has M's lowest frequency (or S's, when all of S moves first).
  bool candidate = false;
  if (n.q == queue::small) {
    // s_cold_ == npos: all of S would move to M first, and x may be the M victim then.
    candidate = i == s_cold_ || (s_cold_ == npos && (main_.count == 0 || n.freq <= main_min_freq()));
  } else if (m_zero_ != npos) {
    candidate = i == m_zero_;
  } else {
    candidate = n.freq <= main_min_freq();
  }
  bool promote_all = false;
  if (candidate && next_victim(&promote_all) == i) {
    commit_evict(i, promote_all);
    return;
  }
  leave(i);
  release(i);
}

void s3fifo_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  // The eviction loop of Algorithm 1 on a scratch M: the real M list, then the entries the
  // loop appends at M's head (promoted S tensors, reinserted M tensors) in scratch_.
  list small = small_;  // byte sums and counts only
  list main = main_;
  index_t s_cur = small_.front;
  index_t m_cur = main_.front;
  std::size_t m_pos = 0;
  scratch_.clear();
  std::size_t freed = 0;
  while (freed < req.bytes_needed && (small.count != 0 || main.count != 0)) {
    index_t victim = npos;
    if (evict_from_small(small, main)) {
      while (s_cur != npos) {  // evictS
        index_t const i = s_cur;
        s_cur = nodes_[i].next;
        --small.count;
        small.sub(nodes_[i].bytes);
        if (nodes_[i].freq > kMoveToMainAbove) {
          scratch_.emplace_back(i, nodes_[i].freq);
          ++main.count;
          main.add(nodes_[i].bytes);
        } else {
          victim = i;
          break;
        }
      }
    } else {
      for (;;) {  // evictM; main.count != 0, so an entry is always there
        index_t i = npos;
        std::uint8_t f = 0;
        if (m_cur != npos) {
          i = m_cur;
          f = nodes_[i].freq;
          m_cur = nodes_[i].next;
        } else {
          i = scratch_[m_pos].first;
          f = scratch_[m_pos].second;
          ++m_pos;
        }
        if (f == 0) {
          victim = i;
          --main.count;
          main.sub(nodes_[i].bytes);
          break;
        }
        scratch_.emplace_back(i, static_cast<std::uint8_t>(f - 1));
      }
    }
    if (victim != npos) {
      out.add(nodes_[victim].id, nodes_[victim].bytes);
      freed = policies::detail::saturating_add(freed, nodes_[victim].bytes);
    }
  }
}

bool s3fifo_policy::order_ok(std::size_t& held) const noexcept
{
  held = 0;
  std::array<std::size_t, max_frequency + 1> counts{};
  for (list const* l : {&small_, &main_, &ghost_}) {
    queue const q = l == &small_ ? queue::small : (l == &main_ ? queue::main : queue::ghost);
    bool const ok = policies::detail::slab_list_ok(nodes_, *l, index_, [&](node const& n) {
      if (n.pinned || n.freq > max_frequency || n.q != q) { return false; }
      if (l == &main_) { ++counts[n.freq]; }
      return true;
    });
    if (!ok) { return false; }
    held += l->count;
  }
  for (node const& n : nodes_) {
    if (n.live && n.pinned && n.freq > max_frequency) { return false; }
  }
  if (counts != m_freq_count_) { return false; }
  return s_cold_ == first_cold(small_.front) && m_zero_ == first_zero(main_.front);
}

namespace policies {

void register_s3fifo(policy_registry& registry)
{
  registry.add(
    "s3fifo",
    "S3-FIFO (Yang et al., SOSP 2023): small, main and ghost FIFO queues; one-hit tensors leave quickly from the small one",
    {
      {"small_ratio", parameter_type::real, "0.1",
       "fraction of the held bytes at or above which the small queue is evicted from, in (0, 1)"},
      {"ghost_ratio", parameter_type::real, "0.9",
       "size of the ghost queue as a fraction of the held bytes (bytes of remembered tensors), in [0, 16]"},
    },
    [](policy_params const& p) {
      s3fifo_policy::config cfg;
      cfg.small_ratio = p.get<double>("small_ratio");
      cfg.ghost_ratio = p.get<double>("ghost_ratio");
      return any_eviction_policy{s3fifo_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool
