// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// plan_predictor.cpp — the `plan` / `oracle` forecasts (plan_predictor.hpp): birth keys,
// period detection, the forecast of the accesses ahead and of each tensor's next use.
#include <tierpool/plan_predictor.hpp>

#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

#include <algorithm>
#include <limits>
#include <bit>

namespace tierpool {
namespace {

constexpr std::uint64_t kWindowTokens = 8;  // tokens hashed to find a candidate period
constexpr std::uint64_t kConfirm = 16;      // tokens in a row that must repeat before planning
constexpr int kMaxRecentMisses = 2;         // mispredictions among the last 32 that drop the forecast
constexpr std::uint64_t kExactBeforeAligning = 2;  // exact matches a candidate period needs before it aligns keys
constexpr std::uint64_t kNotAccessed = ~std::uint64_t{0};

std::uint64_t mix(std::uint64_t a, std::uint64_t b) noexcept
{
  std::uint64_t z = a ^ (std::rotl(b, 29) + 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

// A young access counts by its shape in the windows that find the period.
std::uint64_t shape_of(std::size_t bytes, std::uint64_t access) noexcept
{
  return mix(access, static_cast<std::uint64_t>(bytes) ^ 0x7a3c5e1f00d1b2c3ULL);
}

}  // namespace

std::string_view to_string(plan_predictor::phase p) noexcept
{
  switch (p) {
    case plan_predictor::phase::learning: return "learning";
    case plan_predictor::phase::planned: return "planned";
    case plan_predictor::phase::fallback: return "fallback";
  }
  return "unknown";
}

plan_predictor::plan_predictor(config c) : cfg_(c)
{
  TIERPOOL_EXPECTS(cfg_.window >= 1, "plan predictor: window must be at least 1");
  TIERPOOL_EXPECTS(cfg_.history >= 64, "plan predictor: history must be at least 64");
  ring_.resize(cfg_.oracle ? 0 : cfg_.history);
}

void plan_predictor::on_allocate(tensor_id id, std::size_t bytes)
{
  if (cfg_.oracle) { return; }
  std::uint64_t key = mix(mix(last_key_, born_since_++), bytes);
  // A chain key an earlier iteration's tensor was aligned away from (Note [Aligning the
  // first iterations]): this birth is that tensor's, under the key it was given.
  if (auto const a = alias_.find(key); a != alias_.end() && !live_of_.contains(a->second)) { key = a->second; }
  key_of_[static_cast<std::uint64_t>(id)] = tensor_info{key, bytes, kNotAccessed, pos_ == 0};
  live_of_.set(key, static_cast<std::uint64_t>(id));
}

void plan_predictor::on_free(tensor_id id) noexcept
{
  auto const it = key_of_.find(static_cast<std::uint64_t>(id));
  if (it == key_of_.end()) { return; }
  live_of_.erase_if(it->second.key, static_cast<std::uint64_t>(id));
  key_of_.erase(it);
}

// Note [Aligning the first iterations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A birth key hashes the access before the birth, so a tensor born after a different
// access gets a different key, and so does every tensor born after an access of it. The
// first iteration of a training loop is such a case: its activations are born after the
// initialisation, the next iteration's after an optimizer step, so none of the first
// iteration's activations has the key of its counterpart in the second, no window of
// tokens repeats, and the forecast could hold only from the third iteration.
//
// So the period's candidates come from windows in which a *young* access (one made within
// 8 accesses of its tensor's first access: the activations a layer writes and the next
// reads; never a tensor allocated before the first access) counts by its shape (size,
// write, stream) instead of its key. The others, the weights among them, still count by
// key, so that one transformer block does not pass for the next. Once a candidate period p
// has two exact matches, an access that does not match the one p back *aligns* when its
// tensor was first accessed within the last period, the access p back has the same shape,
// and that access's key has no live tensor (its tensor was freed, as last iteration's
// activation is): the tensor takes that key. Its earlier accesses in the history are
// rewritten to it and linked to the old life's as a rebirth, and its own birth key is
// remembered as an alias of the taken one, so that the next iteration's tensor born at the
// same point gets the taken key at birth. Tensors born after an aligned one chain from its
// new key and so get their counterparts' keys directly. When the forecast starts to hold,
// the live tensors accessed in the period before are aligned the same way (align_back),
// so that it names them before their next access: once per planning, not per candidate
// (a scan of up to a period; candidates come and go on a stream that never repeats, and
// scanning at each one's second exact match cost the 4-thread hit path with `plan` 20 %).
// A wrong alignment costs what a wrong forecast does (mispredictions, then a relearn),
// never bytes.
// On mlp-train (3 iterations) the forecast now holds from the 24th of the second
// iteration's 81 accesses instead of the 71st (its optimizer step); on transformer-train
// from the 24th of 134 instead of the 109th.

void plan_predictor::align(std::uint64_t raw, tensor_info& t, std::uint64_t key)
{
  std::uint64_t const from = t.key;
  std::uint64_t const h = ring_.size();
  // Rewrite the tensor's accesses still in the history.
  std::uint64_t latest = kNotAccessed;
  if (t.first_pos != kNotAccessed && pos_ - t.first_pos < h) {
    for (std::uint64_t q = t.first_pos;;) {
      entry& e = at(q);
      if (e.key != from) { break; }
      e.key = key;
      e.token = mix(key, e.access);
      latest = q;
      if (e.next_same == 0 || e.next_reborn) { break; }
      q += e.next_same;
      if (pos_ - q > h || q >= pos_) { break; }
    }
  }
  // Its first access is the rebirth of the old life's last.
  if (latest != kNotAccessed) {
    auto const lp = last_pos_.find(key);
    if (lp != last_pos_.end() && t.first_pos > lp->second && t.first_pos - lp->second < h) {
      entry& prev = at(lp->second);
      prev.next_same = static_cast<std::uint32_t>(t.first_pos - lp->second);
      prev.next_reborn = true;
    }
    last_pos_[key] = latest;
    last_id_[key] = raw;
    reborn_[key] = true;
  }
  last_pos_.erase(from);
  last_id_.erase(from);
  reborn_.erase(from);
  live_of_.erase_if(from, raw);
  live_of_.set(key, raw);
  alias_[from] = key;
  if (last_key_ == from) { last_key_ = key; }
  t.key = key;
  ++aligned_;
}

void plan_predictor::align_back(std::uint64_t i)
{
  std::uint64_t const h = ring_.size();
  std::uint64_t const lowest = std::max(i - period_ + 1, pos_ > h ? pos_ - h + period_ : period_);
  for (std::uint64_t j = i; j-- > lowest;) {
    entry const& e = at(j);
    entry const& back = at(j - period_);
    if (e.key == back.key || shape_of(e.bytes, e.access) != shape_of(back.bytes, back.access) ||
        live_of_.contains(back.key)) {
      continue;
    }
    std::uint64_t const* live = live_of_.find(e.key);
    if (live == nullptr) { continue; }  // freed since: nothing ahead to name
    std::uint64_t const raw = *live;
    auto const info = key_of_.find(raw);
    if (info == key_of_.end() || info->second.key != e.key || info->second.first_pos <= j - period_) { continue; }
    align(raw, info->second, back.key);
  }
}

void plan_predictor::on_access(access_view const& a, prefetch_plan& out)
{
  (void)out;
  if (cfg_.oracle) {
    ++pos_;
    return;
  }
  auto const raw = static_cast<std::uint64_t>(a.id);
  auto info = key_of_.find(raw);
  if (info == key_of_.end()) {  // allocated before the planner saw it: its id is its key
    std::uint64_t const key = mix(0x51ed270b27e0ec0dULL, raw);
    info = key_of_.emplace(raw, tensor_info{key, a.bytes, kNotAccessed, true}).first;
    live_of_.set(key, raw);
  }
  tensor_info& t = info->second;
  std::uint64_t const i = pos_;
  std::uint64_t const h = ring_.size();
  if (t.first_pos == kNotAccessed) { t.first_pos = i; }
  std::uint64_t const access = mix(a.write ? 1 : 0, a.stream);
  std::uint64_t const shape = shape_of(a.bytes, access);

  // Check the forecast against what happened, aligning a young tensor with its counterpart
  // one period back (Note [Aligning the first iterations]).
  if (period_ != 0 && i >= period_) {
    entry const& back = at(i - period_);
    bool match = back.token == mix(t.key, access);
    bool const counterpart = !match && back.key != t.key && t.first_pos > i - period_ &&
                             shape_of(back.bytes, back.access) == shape && !live_of_.contains(back.key);
    if (counterpart && exact_ >= kExactBeforeAligning) {
      align(raw, t, back.key);
      match = true;
    } else if (match) {
      ++exact_;
    }
    if (state_ == phase::planned) {
      (match ? hits_ : misses_) += 1;
      recent_miss_mask_ = (recent_miss_mask_ << 1U) | (match ? 0U : 1U);
      if (std::popcount(recent_miss_mask_ & 0xffffffffULL) >= kMaxRecentMisses) {
        state_ = phase::fallback;
        ++relearns_;
        period_ = 0;
        streak_ = 0;
        recent_miss_mask_ = 0;
      }
    } else if (match || counterpart) {
      ++streak_;
    } else {
      period_ = 0;
      streak_ = 0;
    }
  }
  std::uint64_t const key = t.key;
  std::uint64_t const token = mix(key, access);

  // Record the access. Keys seen are remembered per key, not per position: a program whose
  // tensors never repeat would grow these without end, so past 4 x history keys they start
  // over (a learned period keeps working; the links to the next use of the same key are
  // relearned within a period).
  if (last_pos_.size() > 4 * h) {
    last_pos_.clear();
    last_id_.clear();
    reborn_.clear();
  }
  if (alias_.size() > 4 * h) { alias_.clear(); }
  at(i) = entry{token, key, access, a.bytes, 0, a.discard, false, !t.before_any && i - t.first_pos < kWindowTokens,
                static_cast<std::uint32_t>(std::min<tick>(a.compute, std::numeric_limits<std::uint32_t>::max()))};
  auto const li = last_id_.find(key);
  bool const reborn = li != last_id_.end() && li->second != raw;
  if (li != last_id_.end()) {
    if (reborn) { reborn_[key] = true; }
    li->second = raw;
  } else {
    last_id_.emplace(key, raw);
  }
  auto const lp = last_pos_.find(key);
  if (lp != last_pos_.end()) {
    if (i - lp->second < h) {
      entry& prev = at(lp->second);
      prev.next_same = static_cast<std::uint32_t>(i - lp->second);
      prev.next_reborn = reborn;
    }
    lp->second = i;
  } else {
    last_pos_.emplace(key, i);
  }

  // A candidate period: where the last kWindowTokens tokens were seen last (a young access
  // counted by its shape).
  if (i + 1 >= kWindowTokens) {
    std::uint64_t wh = 0;
    for (std::uint64_t k = i + 1 - kWindowTokens; k <= i; ++k) {
      entry const& e = at(k);
      wh = mix(wh, e.young ? shape_of(e.bytes, e.access) : e.token);
    }
    if (windows_.size() > 4 * h) { windows_.clear(); }  // a schedule that never repeats
    auto [it, fresh] = windows_.try_emplace(wh, i);
    if (!fresh) {
      std::uint64_t const p = i - it->second;
      if (period_ == 0 && p * 2 + cfg_.window <= h) {
        period_ = p;
        streak_ = 0;
        exact_ = 0;
      }
      it->second = i;
    }
  }
  if (state_ != phase::planned && period_ != 0 && streak_ >= kConfirm) {
    state_ = phase::planned;
    recent_miss_mask_ = 0;
    align_back(i + 1);  // the live young tensors of the period before (this access is aligned)
  }
  ++pos_;
  last_key_ = key;
  born_since_ = 0;
  last_next_.reset();
  if (state_ == phase::planned) { forecast_last(key, a.id); }
}

void plan_predictor::forecast_last(std::uint64_t key, tensor_id id) noexcept
{
  (void)id;
  last_next_ = forecast_at(key, pos_ - 1);
}

std::optional<tick> plan_predictor::forecast_at(std::uint64_t key, std::uint64_t i) const noexcept
{
  if (i < period_) { return std::nullopt; }
  entry const& back = at(i - period_);
  if (back.key != key) { return std::nullopt; }  // mispredicted: no forecast for it
  std::uint64_t const d = back.next_same;
  if (d != 0 && back.next_reborn) { return tick{no_next_use}; }  // the key's next access was of the next life's tensor
  if (d != 0 && d < period_) { return tick{i + d}; }
  auto const r = reborn_.find(key);
  bool const reborn = r != reborn_.end() && r->second;
  return reborn ? tick{no_next_use} : tick{i + period_};
}

std::optional<tick> plan_predictor::next_use_if_next(tensor_id id) const noexcept
{
  if (state_ != phase::planned || pos_ < period_) { return std::nullopt; }
  auto const k = key_of_.find(static_cast<std::uint64_t>(id));
  if (k == key_of_.end()) { return std::nullopt; }
  return forecast_at(k->second.key, pos_);
}

std::size_t plan_predictor::upcoming(std::span<planned_access> out, std::size_t skip) const noexcept
{
  if (state_ != phase::planned || pos_ == 0) { return 0; }
  std::uint64_t const i = pos_ - 1;
  std::uint64_t const ahead = std::min<std::uint64_t>(cfg_.window, period_);
  std::size_t n = 0;
  for (std::uint64_t o = 1 + skip; o <= ahead && n < out.size(); ++o) {
    entry const& e = at(i + o - period_);
    std::uint64_t const* live = live_of_.find(e.key);
    // The last access of its tensor one period back: the key's next access was the next
    // life's, or has not come yet although the key is reborn each period or its tensor
    // has been freed since (the first period learned: no key reborn yet).
    bool const last = e.next_reborn || (e.next_same == 0 && (live == nullptr || reborn_.contains(e.key)));
    if (live == nullptr) {  // not born yet: room to keep, nothing to prefetch
      out[n++] = planned_access{tensor_id{kUnbornTensor | (e.key >> 1U)}, e.bytes, tick{i + o}, e.discard, last, e.compute};
      continue;
    }
    // A key names one size (a birth key hashes it; an aligned tensor has its counterpart's
    // shape), so the entry's bytes are the live tensor's: no second lookup.
    out[n++] = planned_access{tensor_id{*live}, e.bytes, tick{i + o}, e.discard, last, e.compute};
  }
  return n;
}

tick plan_predictor::period_compute() const noexcept
{
  if (period_ == 0 || period_ > pos_ || period_ > ring_.size()) { return 0; }
  tick sum = 0;
  for (std::uint64_t p = pos_ - period_; p < pos_; ++p) { sum += at(p).compute; }
  return sum;
}

void plan_predictor::set_compute(std::uint64_t position, tick ns) noexcept
{
  if (position >= pos_ || pos_ - position > ring_.size()) { return; }
  at(position).compute = static_cast<std::uint32_t>(std::min<tick>(ns, std::numeric_limits<std::uint32_t>::max()));
}

namespace policies {

void register_plan_predictors(policy_registry& registry)
{
  auto make = [](policy_params const& p, bool oracle) {
    plan_predictor::config c;
    c.oracle = oracle;
    c.budget_bytes = p.get<std::uint64_t>("budget");
    auto const window = p.get<std::uint64_t>("window");
    TIERPOOL_EXPECTS(window >= 1 && window <= 65536, "plan predictor: window must be in 1..65536");
    c.window = static_cast<std::uint32_t>(window);
    c.prefetch = p.get<bool>("prefetch");
    c.write_back = p.get<bool>("writeback");
    c.clean_ahead = p.get<bool>("clean_ahead");
    c.stream_reuse = p.get<bool>("stream_reuse");
    auto const sample = p.get<std::uint64_t>("sample");
    TIERPOOL_EXPECTS(sample >= 1 && sample <= 64, "plan predictor: sample must be in 1..64");
    c.victim_sample = static_cast<std::uint32_t>(sample);
    c.conservative = p.get<bool>("conservative");
    c.keep = p.get<bool>("keep");
    c.timing = p.get<bool>("timing");
    if (!oracle) {
      auto const history = p.get<std::uint64_t>("history");
      TIERPOOL_EXPECTS(history >= 64 && history <= (1ULL << 26), "plan predictor: history must be in 64..67108864");
      c.history = static_cast<std::uint32_t>(history);
      c.probe = p.get<bool>("probe");
    } else {
      c.probe = false;  // no periods: the program's schedule
    }
    return any_prefetch_predictor{plan_predictor{c}};
  };
  std::vector<policy_parameter> common = {
    {"budget", parameter_type::bytes, "0", "bytes prefetched and not yet used at most; 0 = a quarter of the device tier"},
    {"window", parameter_type::unsigned_integer, "1024", "accesses ahead the planner looks at"},
    {"prefetch", parameter_type::boolean, "on", "issue planned prefetches (off: forecast and early write-backs only)"},
    {"writeback", parameter_type::boolean, "on", "write dirty tensors that will be evicted back early, on the d2h stream"},
    {"clean_ahead", parameter_type::boolean, "off",
     "also write back the dirty ones among the victims the policy would give next (an eighth of the tier)"},
    {"stream_reuse", parameter_type::boolean, "on",
     "a planned copy may take room vacated behind user work, waiting for it in stream order"},
    {"sample", parameter_type::unsigned_integer, "8",
     "a prefetch that has to evict asks the policy for this many times the room and evicts, of those, what the "
     "forecast needs last (1..64; 1: the policy's order)"},
    {"conservative", parameter_type::boolean, "off",
     "evict for a prefetch only what the demand schedule would evict anyway: never more bytes moved than without "
     "prefetching (for runs the link bounds)"},
    {"keep", parameter_type::boolean, "on",
     "evictions pass over tensors the forecast needs before the horizon (the keep window; off: the policy's order "
     "alone)"},
    {"timing", parameter_type::boolean, "on",
     "a copy-in that has to evict waits for its latest start: the step where the compute left before its use no "
     "longer covers the copies queued before it (device times known ahead only; off: as soon as room allows)"}};
  std::vector<policy_parameter> learned = common;
  learned.push_back({"history", parameter_type::unsigned_integer, "65536",
                     "accesses remembered; a longer iteration is never learned"});
  learned.push_back({"probe", parameter_type::boolean, "on",
                     "measure whether prefetching pays: after 4 planned periods with prefetches, 3 without; the "
                     "faster stays, and the other is tried again after 16, 32, ... periods (off: always prefetch)"});
  registry.add_predictor("plan",
                         "transfer planner: learns an iteration's schedule, prefetches in use order without evicting "
                         "anything needed sooner, writes dirty tensors back early (the online planner)",
                         std::move(learned), [make](policy_params const& p) { return make(p, false); });
  registry.add_predictor("oracle",
                         "transfer planner driven by the program's true schedule (pool_options::schedule; tierpool "
                         "replay gives the trace's future): what the online planner would do if it knew",
                         std::move(common), [make](policy_params const& p) { return make(p, true); });
}

}  // namespace policies
}  // namespace tierpool
