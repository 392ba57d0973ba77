// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena.cpp — the offset-based TLSF sub-allocator of include/tierpool/arena.hpp.
//
// Owns: the size-class mapping (two-level bins), the free lists and their bitmaps, the
// node storage (blocks and the free index list), region bookkeeping, and validate().
// Main entry points: arena::allocate and arena::deallocate. Design note:
// runtime/arena/README.md.
//
// Invariants (checked by validate()):
//   SUM(block.size over region r) == region_capacity(r), blocks in offset order, no gaps
//   no two physically adjacent blocks are both free
//   block free <=> block on the free list of bin_of(block.size)
//   bit (fl, sl) of the bitmaps set <=> that bin's list is non-empty
//   head_size_[bin] == size of the bin's head (0: empty)
//   a used block's node holds its region; a free block's is its used neighbours' region
//   used_ == SUM(size of used blocks); allocation_count_ == COUNT(used blocks)
#include <tierpool/arena.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <limits>
#include <new>
#include <string>
#include <utility>

namespace tierpool {

namespace {

// Each arena gets an id so that a handle from another arena is recognised as foreign.
std::atomic<std::uint32_t> next_owner_id{1};

std::uint32_t make_owner_id() noexcept
{
  std::uint32_t id = next_owner_id.fetch_add(1, std::memory_order_relaxed);
  if (id == 0) { id = next_owner_id.fetch_add(1, std::memory_order_relaxed); }  // 0 = "no arena"
  return id;
}

// The hot helpers are private to this file; inlining them into allocate/deallocate
// saves a call per step (GCC's -O2 heuristics keep several of them out of line).
#define TIERPOOL_ARENA_HOT [[gnu::always_inline]] inline

[[noreturn, gnu::cold, gnu::noinline]] void throw_not_live(std::uint64_t offset, std::uint64_t size)
{
  detail::throw_logic_error(__FILE__, __LINE__,
                            "arena::deallocate: offset " + std::to_string(offset) + " (" +
                              std::to_string(size) +
                              " bytes) is not a live allocation of this arena (double free, "
                              "freed by reset, or another arena's handle)");
}

// c ? x : y without a branch (Note [Coin-flip branches]). The empty asm hides where the
// mask came from, so GCC cannot turn the selection back into a branch on c.
template <class T>
[[gnu::always_inline]] inline T pick(bool c, T x, T y) noexcept
{
  T mask = static_cast<T>(T{0} - static_cast<T>(c ? 1U : 0U));
#if defined(__GNUC__)
  asm("" : "+r"(mask));
#endif
  return static_cast<T>(y ^ ((x ^ y) & mask));
}

constexpr std::uint32_t kInitialNodes = 64;  // nodes; grows by doubling, amortised O(1)

}  // namespace

// Note [Size classes]
// ~~~~~~~~~~~~~~~~~~~
// Sizes are counted in units of min_alignment (u = size >> gran_shift_). With S =
// 2^sl_log2_ subdivisions per power of two:
//   u <  S : fl = 0,               sl = u                      (exact classes)
//   u >= S : fl = msb(u) - sl_log2 + 1, sl = (u >> (msb(u) - sl_log2)) - S
// so bin (fl, sl) holds blocks whose size lies within 1/S of the bin's lower bound. A
// request is rounded up to the next bin boundary before the bitmap search, so every
// block of the bin found fits ("good fit", O(1): two find-first-set operations).

TIERPOOL_ARENA_HOT std::uint32_t arena::bin_of(std::uint64_t size) const noexcept
{
  // Branch-free form of the mapping above: with shift = msb(max(u, S)) - sl_log2,
  // (shift << sl_log2) + (u >> shift) is u when u < S (shift = 0) and
  // ((fl << sl_log2) | sl) otherwise ((u >> shift) = S + sl, fl = shift + 1).
  std::uint64_t const u = size >> gran_shift_;
  auto const shift = static_cast<std::uint32_t>(std::bit_width(u | (std::uint64_t{1} << sl_log2_)) - 1) - sl_log2_;
  return (shift << sl_log2_) + static_cast<std::uint32_t>(u >> shift);
}

TIERPOOL_ARENA_HOT std::uint32_t arena::bin_round_up(std::uint64_t size) const noexcept
{
  std::uint64_t u = size >> gran_shift_;
  std::uint64_t const sl_count = std::uint64_t{1} << sl_log2_;
  if (u >= sl_count) {
    auto const msb = static_cast<std::uint32_t>(std::bit_width(u) - 1);
    u += (std::uint64_t{1} << (msb - sl_log2_)) - 1;  // cannot overflow: u < 2^61
  }
  return bin_of(u << gran_shift_);
}

std::uint64_t arena::bin_lower_bound(std::uint32_t bin) const noexcept
{
  std::uint32_t const fl = bin >> sl_log2_;
  std::uint64_t const sl = bin & ((1U << sl_log2_) - 1U);
  if (fl == 0) { return sl << gran_shift_; }
  std::uint64_t const u = ((std::uint64_t{1} << sl_log2_) + sl) << (fl - 1);
  return u << gran_shift_;
}

// ---- construction --------------------------------------------------------------------

arena::arena(std::uint64_t capacity, arena_options opts) : opts_(opts)
{
  TIERPOOL_EXPECTS(std::has_single_bit(opts.min_alignment) && opts.min_alignment >= 8,
                   "arena: min_alignment must be a power of two >= 8");
  TIERPOOL_EXPECTS(opts.second_level_log2 >= 2 && opts.second_level_log2 <= 6,
                   "arena: second_level_log2 must be in 2..6");
  gran_mask_ = opts.min_alignment - 1;
  gran_shift_ = static_cast<std::uint32_t>(std::countr_zero(opts.min_alignment));
  sl_log2_ = opts.second_level_log2;
  // Rounded-up unit counts stay below 2^(65 - gran_shift_): fl <= 65 - gran_shift_ - sl_log2_.
  fl_count_ = 66 - gran_shift_ - sl_log2_;
  owner_ = make_owner_id();
  heads_.assign(static_cast<std::size_t>(fl_count_) << sl_log2_, none);
  head_size_.assign(heads_.size(), 0);
  sl_bitmap_.assign(fl_count_, 0);
  if (capacity != 0) { add_region(capacity); }
}

arena::~arena() = default;

arena::arena(arena&& other) noexcept
  : opts_(other.opts_),
    gran_mask_(other.gran_mask_),
    gran_shift_(other.gran_shift_),
    sl_log2_(other.sl_log2_),
    fl_count_(other.fl_count_),
    owner_(other.owner_),
    generation_(other.generation_),
    nodes_(std::move(other.nodes_)),
    unused_head_(std::exchange(other.unused_head_, none)),
    spare_nodes_(std::exchange(other.spare_nodes_, 0)),
    heads_(std::move(other.heads_)),
    head_size_(std::move(other.head_size_)),
    fl_bitmap_(std::exchange(other.fl_bitmap_, 0)),
    sl_bitmap_(std::move(other.sl_bitmap_)),
    regions_(std::move(other.regions_)),
    capacity_(std::exchange(other.capacity_, 0)),
    used_(std::exchange(other.used_, 0)),
    allocation_count_(std::exchange(other.allocation_count_, 0)),
    free_block_count_(std::exchange(other.free_block_count_, 0))
{
  // Leave the source a valid, empty arena that recognises none of the moved handles.
  other.owner_ = make_owner_id();
  other.nodes_.clear();
  other.regions_.clear();
  other.heads_.assign(static_cast<std::size_t>(other.fl_count_) << other.sl_log2_, none);
  other.head_size_.assign(other.heads_.size(), 0);
  other.sl_bitmap_.assign(other.fl_count_, 0);
}

arena& arena::operator=(arena&& other) noexcept
{
  if (this != &other) {
    this->~arena();
    new (this) arena(std::move(other));
  }
  return *this;
}

std::uint32_t arena::add_region(std::uint64_t bytes)
{
  std::uint64_t const cap = bytes & ~gran_mask_;
  TIERPOOL_EXPECTS(cap > 0, "arena::add_region: a region must hold at least min_alignment bytes");
  TIERPOOL_EXPECTS(capacity_ <= std::numeric_limits<std::uint64_t>::max() - cap,
                   "arena::add_region: the global offset space (2^64 bytes) would overflow");
  TIERPOOL_EXPECTS(regions_.size() < none - 1, "arena::add_region: too many regions");
  if (spare_nodes_ == 0 && !grow_nodes()) { throw std::bad_alloc(); }
  auto const r = static_cast<std::uint32_t>(regions_.size());
  regions_.push_back(region_info{capacity_, cap, none});
  capacity_ += cap;
  init_region_block(r);
  return r;
}

void arena::init_region_block(std::uint32_t r)
{
  region_info& reg = regions_[r];
  std::uint32_t const n = new_node();
  node& blk = nodes_[n];
  blk.offset_state = reg.base;
  blk.size = reg.capacity;
  blk.prev_phys = none;
  blk.next_phys = none;
  reg.first_node = n;
  insert_free(n);
}

void arena::reset() noexcept
{
  std::fill(heads_.begin(), heads_.end(), none);
  std::fill(head_size_.begin(), head_size_.end(), 0);
  std::fill(sl_bitmap_.begin(), sl_bitmap_.end(), 0);
  fl_bitmap_ = 0;
  unused_head_ = none;
  spare_nodes_ = 0;
  // Every node becomes unused; a stale handle fails the state or generation check.
  for (std::size_t i = nodes_.size(); i-- > 0;) { release_node(static_cast<std::uint32_t>(i)); }
  used_ = 0;
  allocation_count_ = 0;
  free_block_count_ = 0;
  // Each region held at least one node, so there is one for each region again.
  for (std::uint32_t r = 0; r < regions_.size(); ++r) { init_region_block(r); }
}

// ---- node storage --------------------------------------------------------------------

TIERPOOL_ARENA_HOT std::uint32_t arena::new_node() noexcept
{
  std::uint32_t const n = unused_head_;
  unused_head_ = nodes_[n].next_free;
  --spare_nodes_;
  return n;
}

TIERPOOL_ARENA_HOT void arena::release_node(std::uint32_t n) noexcept
{
  node& x = nodes_[n];
  x.offset_state = static_cast<std::uint64_t>(node_state::unused);
  x.next_free = unused_head_;
  unused_head_ = n;
  ++spare_nodes_;
}

bool arena::grow_nodes() noexcept
{
  std::size_t const old = nodes_.size();
  std::size_t const limit = none - 1;  // `none` is reserved
  if (old >= limit) { return false; }
  std::size_t const grown = std::min(limit, std::max<std::size_t>(kInitialNodes, old * 2));
  try {
    nodes_.resize(grown, node{});  // zero: unused; release_node links them below
  } catch (...) {
    return false;  // metadata could not grow: report as a failed allocation
  }
  for (std::size_t i = grown; i-- > old;) { release_node(static_cast<std::uint32_t>(i)); }
  return true;
}

// ---- free lists ----------------------------------------------------------------------

// Insert is branch-free and remove nearly so (Note [Coin-flip branches]): a link write
// that has no target goes to b's own node instead (whose links are rewritten or dead
// afterwards), and bitmap bits are set (idempotent) or cleared with masks.
TIERPOOL_ARENA_HOT void arena::insert_free(std::uint32_t b) noexcept
{
  node* const nd = nodes_.data();
  node& n = nd[b];
  std::uint32_t const bin = bin_of(n.size);
  std::uint32_t const head = heads_[bin];
  nd[pick(head != none, head, b)].prev_free = b;  // empty list: hits b, reset just below
  n.offset_state = (n.offset_state & ~state_mask) | static_cast<std::uint64_t>(node_state::free);
  n.prev_free = none;
  n.next_free = head;
  std::uint32_t const fl = bin >> sl_log2_;
  sl_bitmap_[fl] |= std::uint64_t{1} << (bin & ((1U << sl_log2_) - 1U));
  fl_bitmap_ |= std::uint64_t{1} << fl;
  heads_[bin] = b;
  head_size_[bin] = n.size;
  ++free_block_count_;
}

// Leaves b's own links unspecified (the caller reuses or re-links b).
TIERPOOL_ARENA_HOT void arena::remove_free(std::uint32_t b) noexcept
{
  node* const nd = nodes_.data();
  std::uint32_t const prev = nd[b].prev_free;
  std::uint32_t const next = nd[b].next_free;
  bool const has_next = next != none;
  if (prev != none) {
    nd[prev].next_free = next;
  } else {
    std::uint32_t const bin = bin_of(nd[b].size);  // the node keeps no bin: Note [A 32-byte node]
    heads_[bin] = next;
    head_size_[bin] = pick(has_next, nd[pick(has_next, next, b)].size, std::uint64_t{0});
    std::uint32_t const fl = bin >> sl_log2_;
    sl_bitmap_[fl] &= ~(std::uint64_t{has_next ? 0U : 1U} << (bin & ((1U << sl_log2_) - 1U)));
    fl_bitmap_ &= ~(std::uint64_t{sl_bitmap_[fl] == 0 ? 1U : 0U} << fl);
  }
  nd[pick(has_next, next, b)].prev_free = prev;
  --free_block_count_;
}

// First block of the first non-empty bin at or above `bin`, or none.
TIERPOOL_ARENA_HOT std::uint32_t arena::search_bins(std::uint32_t bin) const noexcept
{
  std::uint32_t fl = bin >> sl_log2_;
  std::uint32_t const sl = bin & ((1U << sl_log2_) - 1U);
  std::uint64_t sl_map = sl_bitmap_[fl] & (~std::uint64_t{0} << sl);
  if (sl_map == 0) {
    std::uint64_t const fl_map = fl + 1 < 64 ? fl_bitmap_ & (~std::uint64_t{0} << (fl + 1)) : 0;
    if (fl_map == 0) { return none; }
    fl = static_cast<std::uint32_t>(std::countr_zero(fl_map));
    sl_map = sl_bitmap_[fl];
  }
  return heads_[(fl << sl_log2_) | static_cast<std::uint32_t>(std::countr_zero(sl_map))];
}

// Note [Best of a few: own bin first, then the guaranteed bin]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Rationale: plain TLSF ("good fit") rounds a request up to the next bin boundary so that
// any block of the bin it finds fits, and takes that bin's head. It never looks at the
// request's own bin, which may hold blocks large enough (a 1.02x block in the
// 1.00x..1.03x bin fits a 1.01x request). Near full, the blocks it skips are often the
// only fitting ones.
// Approach: (1) look at the request's own bin and take its tightest fitting block among
// the first opts_.bin_scan_limit (ties: lowest offset); (2) otherwise find the first
// non-empty bin that guarantees a fit with the bitmaps and take the tightest, then lowest,
// of its first bin_scan_limit blocks. With the default limit of 1 both steps look at a
// bin head only, and step (1) reads the head's size from head_size_ rather than from its
// node. When the request starts a bin (own == want), step (1) is step (2) for that bin.
// Allocation stays O(1) (0 = unbounded scans, for experiments).
// Limitations: a bounded scan can miss the tightest block or a fitting block deep in a
// bin. Since Note [Place against the larger neighbour], longer scans buy few failures
// (rand85: about 100 with 1 block, 70-100 with 4, 40-110 unbounded) and cost 10-25 % of
// the time of a random allocate+free; figures: runtime/arena/README.md.
TIERPOOL_ARENA_HOT std::uint32_t arena::find_fit(std::uint64_t size) const noexcept
{
  std::uint32_t const limit = opts_.bin_scan_limit == 0 ? none : opts_.bin_scan_limit;
  auto better = [this](std::uint32_t x, std::uint32_t y) noexcept {  // x tighter, or as tight and lower
    node const& a = nodes_[x];
    node const& b = nodes_[y];
    return a.size < b.size || (a.size == b.size && a.offset() < b.offset());
  };
  // own = bin_of(size), want = bin_round_up(size), with one bit scan: bins are numbered
  // consecutively, so rounding up is "own + 1" unless size is a bin's lower bound.
  std::uint64_t const u = size >> gran_shift_;
  auto const shift = static_cast<std::uint32_t>(std::bit_width(u | (std::uint64_t{1} << sl_log2_)) - 1) - sl_log2_;
  std::uint32_t const own = (shift << sl_log2_) + static_cast<std::uint32_t>(u >> shift);
  std::uint32_t const want = own + ((u & ((std::uint64_t{1} << shift) - 1)) != 0 ? 1U : 0U);
  {
    // The head's size is kept next to the head (head_size_), so the common case (scan
    // limit 1, or a head that already fits) decides without touching a node. When own ==
    // want every block of the bin fits, so this also covers "size starts a bin" without
    // a (badly predicted) branch on it.
    std::uint32_t best = head_size_[own] >= size ? heads_[own] : none;
    std::uint64_t best_size = head_size_[own];
    if (limit > 1 && heads_[own] != none) [[unlikely]] {
      std::uint64_t best_offset = best != none ? nodes_[best].offset() : 0;
      std::uint32_t budget = limit - 1;
      for (std::uint32_t b = nodes_[heads_[own]].next_free; b != none && budget != 0; b = nodes_[b].next_free, --budget) {
        node const& n = nodes_[b];
        if (n.size >= size &&
            (best == none || n.size < best_size || (n.size == best_size && n.offset() < best_offset))) {
          best = b;
          best_size = n.size;
          best_offset = n.offset();
        }
      }
    }
    if (best != none) { return best; }
  }
  std::uint32_t found = search_bins(want);
  if (limit > 1 && found != none) [[unlikely]] {
    std::uint32_t budget = limit - 1;
    for (std::uint32_t b = nodes_[found].next_free; b != none && budget != 0; b = nodes_[b].next_free, --budget) {
      if (better(b, found)) { found = b; }
    }
  }
  return found;
}

// ---- allocate / free -----------------------------------------------------------------

void arena::fail_allocate(std::uint64_t bytes, std::uint64_t alignment)
{
  if (bytes == 0) { detail::throw_logic_error(__FILE__, __LINE__, "arena::allocate: bytes must be > 0"); }
  detail::throw_logic_error(__FILE__, __LINE__,
                            "arena::allocate: alignment " + std::to_string(alignment) +
                              " is not a power of two");
}

std::optional<arena::allocation> arena::allocate(std::uint64_t bytes, std::uint64_t alignment)
{
  // One branch for both preconditions: bytes > 0 and alignment a power of two (or 0).
  if (((bytes == 0) | ((alignment & (alignment - 1)) != 0)) != 0) [[unlikely]] {
    fail_allocate(bytes, alignment);
  }
  return allocate_unchecked(bytes, alignment);
}

std::optional<arena::allocation> arena::allocate_unchecked(std::uint64_t bytes, std::uint64_t alignment) noexcept
{
  if (bytes > capacity_) [[unlikely]] { return std::nullopt; }
  // Two nodes at most are needed (alignment padding, tail); get them before any change.
  if (spare_nodes_ < 2) [[unlikely]] {
    if (!grow_nodes()) { return std::nullopt; }
  }
  std::uint64_t const size = (bytes + gran_mask_) & ~gran_mask_;  // <= capacity_: no overflow
  if (alignment > gran_mask_ + 1) [[unlikely]] { return allocate_aligned(size, alignment); }
  std::uint32_t const b = find_fit(size);
  if (b == none) { return std::nullopt; }
  return take_placed(b, size);
}

// Alignment above min_alignment: search for size + (alignment - min_alignment), which
// always leaves room to align; failing that, scan the bins between the request's own bin
// and the guaranteed one for a block that fits once aligned.
std::optional<arena::allocation> arena::allocate_aligned(std::uint64_t size, std::uint64_t alignment) noexcept
{
  auto aligned_fit = [&](std::uint32_t b, std::uint64_t& out) noexcept {
    node const& n = nodes_[b];
    std::uint64_t const local = n.offset() - regions_[region_of_free(b)].base;
    std::uint64_t const rem = local & (alignment - 1);
    std::uint64_t const pad = rem == 0 ? 0 : alignment - rem;
    if (pad > n.size || n.size - pad < size) { return false; }
    out = n.offset() + pad;
    return true;
  };
  std::uint64_t const extra = alignment - (gran_mask_ + 1);
  std::uint32_t stop = static_cast<std::uint32_t>(heads_.size());
  std::uint64_t offset = 0;
  if (extra <= capacity_ - size) {
    stop = bin_round_up(size + extra);
    std::uint32_t const b = search_bins(stop);
    if (b != none && aligned_fit(b, offset)) { return take_at(b, offset, size); }
  }
  std::uint32_t budget = opts_.bin_scan_limit == 0 ? none : opts_.bin_scan_limit;
  for (std::uint32_t bin = bin_of(size); bin < stop && budget != 0; ++bin) {
    for (std::uint32_t b = heads_[bin]; b != none && budget != 0; b = nodes_[b].next_free, --budget) {
      if (aligned_fit(b, offset)) { return take_at(b, offset, size); }
    }
  }
  return std::nullopt;
}

std::optional<arena::allocation> arena::allocate_at(std::uint64_t offset, std::uint64_t bytes) noexcept
{
  if (bytes == 0 || bytes > capacity_ || offset >= capacity_ || (offset & gran_mask_) != 0) { return std::nullopt; }
  std::uint64_t const size = (bytes + gran_mask_) & ~gran_mask_;
  if (size > capacity_ - offset) { return std::nullopt; }
  std::uint32_t const r = region_at(offset);
  if (r >= regions_.size() || offset + size > regions_[r].base + regions_[r].capacity) { return std::nullopt; }
  std::uint32_t b = regions_[r].first_node;
  while (b != none && nodes_[b].offset() + nodes_[b].size <= offset) { b = nodes_[b].next_phys; }
  if (b == none || nodes_[b].state() != node_state::free || nodes_[b].offset() > offset ||
      offset + size > nodes_[b].offset() + nodes_[b].size) {
    return std::nullopt;
  }
  if (spare_nodes_ < 2 && !grow_nodes()) { return std::nullopt; }  // take_at splits twice at most
  return take_at(b, offset, size);
}

// Carve [offset, offset + size) out of free block b for an alignment above
// min_alignment (the caller chose the offset). The left piece keeps b's node, so a
// region's first node never changes; padding and tail stay free (their physical
// neighbours are used: b was free, so its neighbours were not).
arena::allocation arena::take_at(std::uint32_t b, std::uint64_t offset, std::uint64_t size) noexcept
{
  std::uint32_t const region = region_of_free(b);  // before b's pieces have free neighbours
  remove_free(b);
  if (offset != nodes_[b].offset()) {
    split_free_left(b, offset - nodes_[b].offset());
    b = nodes_[b].next_phys;
  }
  if (nodes_[b].size != size) { split_free_right(b, size); }
  return mark_used(b, region);
}

// Take `size` bytes from free block b at the end next to its larger neighbour (Note
// [Place against the larger neighbour]). Both placements split b the same way: b keeps
// the left piece, a new node the right one; only which piece is handed out differs, so
// the (unpredictable) choice is a pair of conditional moves, not a branch.
TIERPOOL_ARENA_HOT arena::allocation arena::take_placed(std::uint32_t b, std::uint64_t size) noexcept
{
  remove_free(b);
  node& blk = nodes_[b];
  if (blk.size == size) { return mark_used(b, region_of_free(b)); }
  // b is free and coalesced, so its neighbours are used blocks (or none: size 0).
  std::uint32_t const prev = blk.prev_phys;
  std::uint32_t const next = blk.next_phys;
  std::uint32_t const region = region_of_free(b);
  // The choice is a coin flip: select, don't branch (Note [Coin-flip branches]).
  std::uint64_t const left_nb = prev != none ? nodes_[prev].size : 0;
  std::uint64_t const right_nb = next != none ? nodes_[next].size : 0;
  bool const high = right_nb > left_nb;
  std::uint64_t const left_size = pick(high, blk.size - size, size);
  std::uint32_t const n = new_node();
  node& r = nodes_[n];
  r.offset_state = blk.offset() + left_size;
  r.size = blk.size - left_size;
  r.prev_phys = b;
  r.next_phys = next;
  if (next != none) { nodes_[next].prev_phys = n; }
  blk.next_phys = n;
  blk.size = left_size;
  insert_free(pick(high, b, n));
  return mark_used(pick(high, n, b), region);
}

// b (off the free lists) becomes an allocation in `region`.
TIERPOOL_ARENA_HOT arena::allocation arena::mark_used(std::uint32_t b, std::uint32_t region) noexcept
{
  node& blk = nodes_[b];
  std::uint64_t const offset = blk.offset();
  blk.offset_state = offset | static_cast<std::uint64_t>(node_state::used);
  blk.generation = ++generation_;
  blk.region = region;
  used_ += blk.size;
  ++allocation_count_;
  allocation a;
  a.offset = offset;
  a.size = blk.size;
  a.region = region;
  a.node_ = b;
  a.generation_ = blk.generation;
  a.owner_ = owner_;
  return a;
}

// Note [A 32-byte node]
// ~~~~~~~~~~~~~~~~~~~~~
// Rationale: a tier's arena holds a node per block, so a pool of a million tensors pays a
// million nodes; at 48 bytes the node was the second largest per-tensor cost after the
// tensor record (issue 19).
// Approach: each field is stored only while it means something. The free-list links
// matter only while a block is free, the generation and the region only while it is used:
// they share two words. The state (2 bits) sits in the low bits of the offset, which is a
// multiple of min_alignment (>= 8). The bin is not stored: remove_free recomputes
// bin_of(size) (a bit scan and two shifts) where the free block is its list's head. The
// generation is the arena's allocation count at the time (generation_), not a per-node
// counter that would have to survive the free period: a stale handle still fails is_live
// unless exactly a multiple of 2^32 allocations happened in between and the node holds a
// block of the same offset and size again, as with the per-node counter before.
// A free block's region is found from its physical neighbours (region_of_free): a free
// block is coalesced, so they are used blocks of the same region; with neither, the block
// spans its region, found by a binary search over the region bases. An arena of one region
// (the common case, and the benchmark's) answers 0 at once.
// Limitations: min_alignment below 4 would not leave room for the state (the options
// require 8); a whole-region free block costs O(log regions) to hand out.

// The region of free block b (Note [A 32-byte node]). b must be coalesced.
TIERPOOL_ARENA_HOT std::uint32_t arena::region_of_free(std::uint32_t b) const noexcept
{
  if (regions_.size() == 1) [[likely]] { return 0; }
  node const& n = nodes_[b];
  if (n.prev_phys != none) { return nodes_[n.prev_phys].region; }
  if (n.next_phys != none) { return nodes_[n.next_phys].region; }
  return region_at(n.offset());
}

// The region holding global offset `offset` (< capacity_): O(log regions).
std::uint32_t arena::region_at(std::uint64_t offset) const noexcept
{
  auto const it = std::upper_bound(regions_.begin(), regions_.end(), offset,
                                   [](std::uint64_t o, region_info const& r) { return o < r.base; });
  return static_cast<std::uint32_t>(it - regions_.begin()) - 1U;
}

// Note [Place against the larger neighbour]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Rationale: which block is chosen matters, but so does *where in it* the allocation
// goes. A free block's neighbours are both used (it is coalesced). Carving the
// allocation from the end next to the larger neighbour, and leaving the remainder next
// to the smaller one, cut rand85 failures from 303-378 (exact best fit, low end) to
// 61-87 (exact best fit) and 91-109 (this arena, 1-block scans) on seeds 1000..1004.
// Always low end, always high end (243-347), small-high/large-low by size (232-388),
// and "remainder next to the larger neighbour" (503-605) were all measured and lose
// (runtime/arena/README.md). Why it works, as far as we can tell: a small neighbour
// tends to be freed (uniformly random lifetimes) into a hole that merges with the
// remainder, while large used blocks end up packed against each other, so holes grow
// from the sides where they can merge.
// Cost: reading the two neighbours' sizes (the right one is written anyway) and no
// branch on the outcome (Note [Coin-flip branches]): both placements split b the same
// way (b keeps the left piece, so a region's first node never changes) and differ only
// in which piece is handed out. Requests with an alignment above min_alignment keep
// the low end (take_at): the caller chose an aligned offset.
//
// Note [Coin-flip branches]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// On random workloads, "is the list empty", "is this block its bin's head", "does it
// have a successor" and the placement choice are close to coin flips (lists hold one or
// two blocks). As branches they cost rand50 about 3.7 mispredictions per allocate+free
// pair (callgrind's branch model); with selects in insert_free, in remove_free's head
// case and for the placement, about 2.2, for ~75 more instructions: rand50 went from
// ~62 to ~55 ns per pair, dnn-* (whose branches predict well) from ~30 to ~35. Making
// all of remove_free branch-free as well was faster still on rand50 (~53) but put
// dnn-static at ~45-55 ns: its unconditional bitmap and head updates chain operations
// through memory, so that branch stays. pick() hides its mask from the optimizer
// because GCC turns a plain ?: back into a branch. The remaining mispredictions are
// mostly the coalescing tests in free_block and the own-bin "does the head fit" test.

// Split block b (off the free lists) after `at` bytes: b keeps [offset, offset + at) and a
// new node, returned, takes the rest. Neither piece is put on a free list here.
TIERPOOL_ARENA_HOT std::uint32_t arena::split_at(std::uint32_t b, std::uint64_t at) noexcept
{
  std::uint32_t const n = new_node();
  node& l = nodes_[b];
  node& r = nodes_[n];
  r.offset_state = l.offset() + at;  // unused until the caller frees or uses it
  r.size = l.size - at;
  r.prev_phys = b;
  r.next_phys = l.next_phys;
  if (l.next_phys != none) { nodes_[l.next_phys].prev_phys = n; }
  l.next_phys = n;
  l.size = at;
  return n;
}

// b keeps the first `left` bytes and stays free; the rest (the caller's block) is new.
TIERPOOL_ARENA_HOT void arena::split_free_left(std::uint32_t b, std::uint64_t left) noexcept
{
  (void)split_at(b, left);
  insert_free(b);
}

// b keeps the first `keep` bytes (the caller's block); the rest is new and free.
TIERPOOL_ARENA_HOT void arena::split_free_right(std::uint32_t b, std::uint64_t keep) noexcept
{
  insert_free(split_at(b, keep));
}


TIERPOOL_ARENA_HOT bool arena::is_live(allocation const& a) const noexcept
{
  if (a.owner_ != owner_ || a.node_ >= nodes_.size()) { return false; }
  node const& n = nodes_[a.node_];
  // A used node's offset_state is its offset + 2 (used): equal exactly when the offsets are.
  return n.state() == node_state::used && n.offset_state == a.offset + static_cast<std::uint64_t>(node_state::used) &&
         n.generation == a.generation_ && n.size == a.size;
}

bool arena::owns(allocation const& a) const noexcept { return is_live(a); }

void arena::deallocate(allocation const& a)
{
  // The message is built out of line: inlined here, its std::string temporaries gave
  // every call a large stack frame and six register saves.
  if (!is_live(a)) [[unlikely]] { throw_not_live(a.offset, a.size); }
  free_block(a.node_);
}

bool arena::try_deallocate(allocation const& a) noexcept
{
  if (!is_live(a)) { return false; }
  free_block(a.node_);
  return true;
}

TIERPOOL_ARENA_HOT std::uint32_t arena::free_block(std::uint32_t b) noexcept
{
  used_ -= nodes_[b].size;
  --allocation_count_;
  std::uint32_t const prev = nodes_[b].prev_phys;
  if (prev != none && nodes_[prev].state() == node_state::free) {
    remove_free(prev);
    node& left = nodes_[prev];
    node const& mid = nodes_[b];
    left.size += mid.size;
    left.next_phys = mid.next_phys;
    if (mid.next_phys != none) { nodes_[mid.next_phys].prev_phys = prev; }
    release_node(b);
    b = prev;
  }
  node& blk = nodes_[b];
  std::uint32_t const next = blk.next_phys;
  if (next != none && nodes_[next].state() == node_state::free) {
    remove_free(next);
    node const& right = nodes_[next];
    blk.size += right.size;
    blk.next_phys = right.next_phys;
    if (right.next_phys != none) { nodes_[right.next_phys].prev_phys = b; }
    release_node(next);
  }
  insert_free(b);
  return b;
}

std::pair<arena::allocation, arena::allocation> arena::split(allocation const& a, std::uint64_t at)
{
  if (!is_live(a)) { throw_not_live(a.offset, a.size); }
  if (at == 0 || at >= a.size || (at & gran_mask_) != 0) {
    throw logic_error("arena: cannot split a block of " + std::to_string(a.size) + " bytes after " +
                      std::to_string(at) + " bytes");
  }
  if (spare_nodes_ == 0 && !grow_nodes()) { throw std::bad_alloc(); }
  std::uint32_t const region = nodes_[a.node_].region;
  std::uint32_t const n = split_at(a.node_, at);
  node& second = nodes_[n];
  second.offset_state |= static_cast<std::uint64_t>(node_state::used);
  second.generation = ++generation_;
  second.region = region;
  ++allocation_count_;
  allocation first = a;
  first.size = at;
  allocation rest;
  rest.offset = second.offset();
  rest.size = second.size;
  rest.region = region;
  rest.node_ = n;
  rest.generation_ = second.generation;
  rest.owner_ = owner_;
  return {first, rest};
}

bool arena::reserve_nodes(std::size_t n) noexcept
{
  while (spare_nodes_ < n) {
    if (!grow_nodes()) { return false; }
  }
  return true;
}

arena::free_around arena::free_neighbours(allocation const& a) const noexcept
{
  free_around out;
  if (!is_live(a)) { return out; }
  node const& n = nodes_[a.node_];
  if (n.prev_phys != none && nodes_[n.prev_phys].state() == node_state::free) { out.before = nodes_[n.prev_phys].size; }
  if (n.next_phys != none && nodes_[n.next_phys].state() == node_state::free) { out.after = nodes_[n.next_phys].size; }
  return out;
}

arena::allocation arena::merge_into(std::span<allocation const> parts, std::uint64_t offset, std::uint64_t bytes)
{
  // Check everything first: the parts live, in one region, each next to the one before or
  // one free block away; the range aligned, covering every part, inside what they span.
  if (parts.empty() || bytes == 0 || (offset & gran_mask_) != 0 || (bytes & gran_mask_) != 0) {
    throw logic_error("arena: merge_into needs at least one part and a range aligned to min_alignment");
  }
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    allocation const& a = parts[i];
    if (!is_live(a)) { throw_not_live(a.offset, a.size); }
    node const& n = nodes_[a.node_];
    if (i == 0) {
      lo = a.offset;
      if (n.prev_phys != none && nodes_[n.prev_phys].state() == node_state::free) { lo -= nodes_[n.prev_phys].size; }
    } else {
      allocation const& p = parts[i - 1];
      std::uint32_t between = nodes_[p.node_].next_phys;
      if (between != a.node_ && (between == none || nodes_[between].state() != node_state::free ||
                                 nodes_[between].next_phys != a.node_)) {
        throw logic_error("arena: merge_into parts are not adjacent (at offset " + std::to_string(a.offset) + ")");
      }
    }
    if (i + 1 == parts.size()) {
      hi = a.offset + a.size;
      if (n.next_phys != none && nodes_[n.next_phys].state() == node_state::free) { hi += nodes_[n.next_phys].size; }
    }
  }
  if (offset < lo || offset > parts.front().offset || offset + bytes > hi ||
      offset + bytes < parts.back().offset + parts.back().size) {
    throw logic_error("arena: merge_into range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                      ") does not cover its parts within their free neighbours");
  }
  if (spare_nodes_ < 2 && !grow_nodes()) { throw std::bad_alloc(); }  // take_at splits twice at most
  std::uint32_t merged = none;
  for (allocation const& a : parts) {
    merged = free_block(a.node_);  // each part joins the free block the previous ones made
  }
  return take_at(merged, offset, bytes);
}

// ---- figures -------------------------------------------------------------------------

std::uint64_t arena::largest_free_block() const noexcept
{
  if (fl_bitmap_ == 0) { return 0; }
  auto const fl = static_cast<std::uint32_t>(std::bit_width(fl_bitmap_) - 1);
  auto const sl = static_cast<std::uint32_t>(std::bit_width(sl_bitmap_[fl]) - 1);
  std::uint64_t largest = 0;
  for (std::uint32_t b = heads_[(fl << sl_log2_) | sl]; b != none; b = nodes_[b].next_free) {
    largest = std::max(largest, nodes_[b].size);
  }
  return largest;
}

double arena::external_fragmentation() const noexcept
{
  std::uint64_t const free = free_bytes();
  if (free == 0) { return 0.0; }
  return 1.0 - static_cast<double>(largest_free_block()) / static_cast<double>(free);
}

arena_statistics arena::statistics() const noexcept
{
  arena_statistics s;
  s.capacity = capacity_;
  s.used_bytes = used_;
  s.free_bytes = free_bytes();
  s.largest_free_block = largest_free_block();
  s.allocation_count = allocation_count_;
  s.free_block_count = free_block_count_;
  s.region_count = region_count();
  s.external_fragmentation = external_fragmentation();
  return s;
}

std::uint64_t arena::region_base(std::uint32_t r) const
{
  TIERPOOL_EXPECTS(r < regions_.size(), "arena::region_base: region index out of range");
  return regions_[r].base;
}

std::uint64_t arena::region_capacity(std::uint32_t r) const
{
  TIERPOOL_EXPECTS(r < regions_.size(), "arena::region_capacity: region index out of range");
  return regions_[r].capacity;
}

// ---- validate ------------------------------------------------------------------------

std::vector<arena::block_info> arena::blocks() const
{
  std::vector<block_info> out;
  out.reserve(static_cast<std::size_t>(allocation_count_ + free_block_count_));
  for_each_block([&out](block_info const& b) { out.push_back(b); });
  return out;
}

bool arena::validate() const
{
  std::size_t const n_nodes = nodes_.size();
  std::uint64_t used = 0;
  std::uint64_t used_blocks = 0;
  std::uint64_t free_blocks = 0;
  std::uint64_t capacity = 0;
  // 1. Blocks tile each region exactly, in offset order, with consistent back links.
  for (std::uint32_t r = 0; r < regions_.size(); ++r) {
    region_info const& reg = regions_[r];
    if (r > 0 && reg.base != regions_[r - 1].base + regions_[r - 1].capacity) { return false; }
    if (reg.first_node >= n_nodes || nodes_[reg.first_node].prev_phys != none) { return false; }
    std::uint64_t expect = reg.base;
    std::uint32_t prev = none;
    std::size_t steps = 0;
    for (std::uint32_t b = reg.first_node; b != none; b = nodes_[b].next_phys) {
      if (b >= n_nodes || ++steps > n_nodes) { return false; }
      node const& n = nodes_[b];
      node_state const st = n.state();
      if (st != node_state::free && st != node_state::used) { return false; }  // unused, or a bad state
      if (n.prev_phys != prev) { return false; }
      if (n.offset() != expect || n.size == 0 || (n.size & gran_mask_) != 0) { return false; }
      if (st == node_state::free) {
        if (prev != none && nodes_[prev].state() == node_state::free) { return false; }  // uncoalesced
        // It stores no region: its neighbours are used blocks of r (region_of_free).
        ++free_blocks;
      } else {
        if (n.region != r) { return false; }
        used += n.size;
        ++used_blocks;
      }
      expect += n.size;
      prev = b;
    }
    if (expect != reg.base + reg.capacity) { return false; }
    capacity += reg.capacity;
  }
  if (capacity != capacity_ || used != used_ || used_blocks != allocation_count_ ||
      free_blocks != free_block_count_) {
    return false;
  }
  // 2. Free lists hold exactly the free blocks, each in its own bin; bitmaps agree.
  std::uint64_t listed = 0;
  for (std::uint32_t fl = 0; fl < fl_count_; ++fl) {
    std::uint64_t sl_map = 0;
    for (std::uint32_t sl = 0; sl < (1U << sl_log2_); ++sl) {
      std::uint32_t const bin = (fl << sl_log2_) | sl;
      std::uint32_t prev = none;
      std::size_t steps = 0;
      for (std::uint32_t b = heads_[bin]; b != none; b = nodes_[b].next_free) {
        if (b >= n_nodes || ++steps > n_nodes) { return false; }
        node const& n = nodes_[b];
        if (n.state() != node_state::free || n.prev_free != prev || bin_of(n.size) != bin) {
          return false;
        }
        if (n.size < bin_lower_bound(bin)) { return false; }
        ++listed;
        prev = b;
      }
      if (head_size_[bin] != (heads_[bin] != none ? nodes_[heads_[bin]].size : 0)) { return false; }
      if (heads_[bin] != none) { sl_map |= std::uint64_t{1} << sl; }
    }
    if (sl_map != sl_bitmap_[fl]) { return false; }
    if (((fl_bitmap_ >> fl) & 1U) != (sl_map != 0 ? 1U : 0U)) { return false; }
  }
  if ((fl_bitmap_ >> fl_count_) != 0 && fl_count_ < 64) { return false; }
  if (listed != free_blocks) { return false; }
  // 3. Node storage: every node is a block or on the unused list, nothing lost.
  std::size_t unused = 0;
  for (std::uint32_t b = unused_head_; b != none; b = nodes_[b].next_free) {
    if (b >= n_nodes || ++unused > n_nodes || nodes_[b].state() != node_state::unused) { return false; }
  }
  return unused == spare_nodes_ && unused + used_blocks + free_blocks == n_nodes;
}

}  // namespace tierpool
