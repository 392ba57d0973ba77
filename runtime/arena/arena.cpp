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
  std::uint64_t const u = size >> gran_shift_;
  std::uint64_t const sl_count = std::uint64_t{1} << sl_log2_;
  if (u < sl_count) { return static_cast<std::uint32_t>(u); }
  auto const msb = static_cast<std::uint32_t>(std::bit_width(u) - 1);
  std::uint32_t const fl = msb - sl_log2_ + 1;
  auto const sl = static_cast<std::uint32_t>((u >> (msb - sl_log2_)) - sl_count);
  return (fl << sl_log2_) | sl;
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
    nodes_(std::move(other.nodes_)),
    unused_head_(std::exchange(other.unused_head_, none)),
    spare_nodes_(std::exchange(other.spare_nodes_, 0)),
    heads_(std::move(other.heads_)),
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
  blk.offset = reg.base;
  blk.size = reg.capacity;
  blk.prev_phys = none;
  blk.next_phys = none;
  blk.region = r;
  reg.first_node = n;
  insert_free(n);
}

void arena::reset() noexcept
{
  std::fill(heads_.begin(), heads_.end(), none);
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
  x.state = node_state::unused;
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
    nodes_.resize(grown, node{0, 0, none, none, none, none, 0, 0, node_state::unused});
  } catch (...) {
    return false;  // metadata could not grow: report as a failed allocation
  }
  for (std::size_t i = grown; i-- > old;) { release_node(static_cast<std::uint32_t>(i)); }
  return true;
}

// ---- free lists ----------------------------------------------------------------------

TIERPOOL_ARENA_HOT void arena::insert_free(std::uint32_t b) noexcept
{
  node& n = nodes_[b];
  std::uint32_t const bin = bin_of(n.size);
  std::uint32_t const head = heads_[bin];
  n.state = node_state::free;
  n.prev_free = none;
  n.next_free = head;
  if (head != none) {
    nodes_[head].prev_free = b;
  } else {
    std::uint32_t const fl = bin >> sl_log2_;
    sl_bitmap_[fl] |= std::uint64_t{1} << (bin & ((1U << sl_log2_) - 1U));
    fl_bitmap_ |= std::uint64_t{1} << fl;
  }
  heads_[bin] = b;
  ++free_block_count_;
}

TIERPOOL_ARENA_HOT void arena::remove_free(std::uint32_t b) noexcept
{
  node const& n = nodes_[b];
  if (n.prev_free != none) {
    nodes_[n.prev_free].next_free = n.next_free;
  } else {
    std::uint32_t const bin = bin_of(n.size);
    heads_[bin] = n.next_free;
    if (n.next_free == none) {
      std::uint32_t const fl = bin >> sl_log2_;
      sl_bitmap_[fl] &= ~(std::uint64_t{1} << (bin & ((1U << sl_log2_) - 1U)));
      if (sl_bitmap_[fl] == 0) { fl_bitmap_ &= ~(std::uint64_t{1} << fl); }
    }
  }
  if (n.next_free != none) { nodes_[n.next_free].prev_free = n.prev_free; }
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
// 1.00x..1.03x bin fits a 1.01x request), and among the blocks of the bin it finds it
// takes the most recently freed, not the tightest or lowest. Near full, the blocks it
// skips are often the only fitting ones: on rand85 plain good fit fails ~700 times per
// million operations (VMA's TLSF reports ~680), while an exact best fit (std::set keyed
// by size then offset) fails ~340 times on the same traces.
// Approach: (1) if the request does not start a bin, scan its own bin and take the
// tightest fitting block (ties: lowest offset); (2) otherwise find the first non-empty
// bin that guarantees a fit with the bitmaps and take the tightest, then lowest, of its
// first few blocks. Both scans stop after opts_.bin_scan_limit blocks (0 = no limit), so
// allocation stays O(1). Requests at a bin boundary (powers of two, most DNN shapes)
// skip step (1) entirely.
// Limitations: a bounded scan can miss the tightest block or a fitting block deep in the
// own bin. Measurements and the defaults (32 subdivisions, 4 blocks): runtime/arena/README.md.
TIERPOOL_ARENA_HOT std::uint32_t arena::find_fit(std::uint64_t size) const noexcept
{
  std::uint32_t const limit = opts_.bin_scan_limit == 0 ? none : opts_.bin_scan_limit;
  auto better = [this](std::uint32_t x, std::uint32_t y) noexcept {  // x tighter, or as tight and lower
    node const& a = nodes_[x];
    node const& b = nodes_[y];
    return a.size < b.size || (a.size == b.size && a.offset < b.offset);
  };
  std::uint32_t const want = bin_round_up(size);
  std::uint32_t const own = bin_of(size);
  if (own != want) {
    std::uint32_t best = none;
    std::uint32_t budget = limit;
    for (std::uint32_t b = heads_[own]; b != none && budget != 0; b = nodes_[b].next_free, --budget) {
      if (nodes_[b].size >= size && (best == none || better(b, best))) { best = b; }
    }
    if (best != none) { return best; }
  }
  std::uint32_t found = search_bins(want);
  if (found == none) { return none; }
  std::uint32_t budget = limit - 1;
  for (std::uint32_t b = nodes_[found].next_free; b != none && budget != 0; b = nodes_[b].next_free, --budget) {
    if (better(b, found)) { found = b; }
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
  return take(b, nodes_[b].offset, size);
}

// Alignment above min_alignment: search for size + (alignment - min_alignment), which
// always leaves room to align; failing that, scan the bins between the request's own bin
// and the guaranteed one for a block that fits once aligned.
std::optional<arena::allocation> arena::allocate_aligned(std::uint64_t size, std::uint64_t alignment) noexcept
{
  auto aligned_fit = [&](std::uint32_t b, std::uint64_t& out) noexcept {
    node const& n = nodes_[b];
    std::uint64_t const local = n.offset - regions_[n.region].base;
    std::uint64_t const rem = local & (alignment - 1);
    std::uint64_t const pad = rem == 0 ? 0 : alignment - rem;
    if (pad > n.size || n.size - pad < size) { return false; }
    out = n.offset + pad;
    return true;
  };
  std::uint64_t const extra = alignment - (gran_mask_ + 1);
  std::uint32_t stop = static_cast<std::uint32_t>(heads_.size());
  std::uint64_t offset = 0;
  if (extra <= capacity_ - size) {
    stop = bin_round_up(size + extra);
    std::uint32_t const b = search_bins(stop);
    if (b != none && aligned_fit(b, offset)) { return take(b, offset, size); }
  }
  std::uint32_t budget = opts_.bin_scan_limit == 0 ? none : opts_.bin_scan_limit;
  for (std::uint32_t bin = bin_of(size); bin < stop && budget != 0; ++bin) {
    for (std::uint32_t b = heads_[bin]; b != none && budget != 0; b = nodes_[b].next_free, --budget) {
      if (aligned_fit(b, offset)) { return take(b, offset, size); }
    }
  }
  return std::nullopt;
}

// Carve [offset, offset + size) out of free block b. The left piece keeps b's node, so a
// region's first node never changes; padding and tail stay free (their physical
// neighbours are used: b was free, so its neighbours were not).
TIERPOOL_ARENA_HOT arena::allocation arena::take(std::uint32_t b, std::uint64_t offset, std::uint64_t size) noexcept
{
  remove_free(b);
  if (offset != nodes_[b].offset) [[unlikely]] {
    std::uint32_t const n = new_node();
    node& left = nodes_[b];
    node& right = nodes_[n];
    right.offset = offset;
    right.size = left.offset + left.size - offset;
    right.region = left.region;
    right.prev_phys = b;
    right.next_phys = left.next_phys;
    if (left.next_phys != none) { nodes_[left.next_phys].prev_phys = n; }
    left.next_phys = n;
    left.size = offset - left.offset;
    insert_free(b);
    b = n;
  }
  node& blk = nodes_[b];
  if (blk.size != size) {
    std::uint32_t const t = new_node();
    node& tail = nodes_[t];
    tail.offset = offset + size;
    tail.size = blk.size - size;
    tail.region = blk.region;
    tail.prev_phys = b;
    tail.next_phys = blk.next_phys;
    if (blk.next_phys != none) { nodes_[blk.next_phys].prev_phys = t; }
    blk.next_phys = t;
    blk.size = size;
    insert_free(t);
  }
  blk.state = node_state::used;
  ++blk.generation;
  used_ += size;
  ++allocation_count_;
  allocation a;
  a.offset = offset;
  a.size = size;
  a.region = blk.region;
  a.node_ = b;
  a.generation_ = blk.generation;
  a.owner_ = owner_;
  return a;
}

TIERPOOL_ARENA_HOT bool arena::is_live(allocation const& a) const noexcept
{
  if (a.owner_ != owner_ || a.node_ >= nodes_.size()) { return false; }
  node const& n = nodes_[a.node_];
  return n.state == node_state::used && n.generation == a.generation_ && n.offset == a.offset &&
         n.size == a.size;
}

bool arena::owns(allocation const& a) const noexcept { return is_live(a); }

void arena::deallocate(allocation const& a)
{
  if (!is_live(a)) [[unlikely]] {
    detail::throw_logic_error(__FILE__, __LINE__,
                              "arena::deallocate: offset " + std::to_string(a.offset) + " (" +
                                std::to_string(a.size) +
                                " bytes) is not a live allocation of this arena (double free, "
                                "freed by reset, or another arena's handle)");
  }
  free_block(a.node_);
}

bool arena::try_deallocate(allocation const& a) noexcept
{
  if (!is_live(a)) { return false; }
  free_block(a.node_);
  return true;
}

TIERPOOL_ARENA_HOT void arena::free_block(std::uint32_t b) noexcept
{
  used_ -= nodes_[b].size;
  --allocation_count_;
  std::uint32_t const prev = nodes_[b].prev_phys;
  if (prev != none && nodes_[prev].state == node_state::free) {
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
  if (next != none && nodes_[next].state == node_state::free) {
    remove_free(next);
    node const& right = nodes_[next];
    blk.size += right.size;
    blk.next_phys = right.next_phys;
    if (right.next_phys != none) { nodes_[right.next_phys].prev_phys = b; }
    release_node(next);
  }
  insert_free(b);
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
      if (n.state == node_state::unused || n.region != r || n.prev_phys != prev) { return false; }
      if (n.offset != expect || n.size == 0 || (n.size & gran_mask_) != 0) { return false; }
      if (n.state == node_state::free) {
        if (prev != none && nodes_[prev].state == node_state::free) { return false; }  // uncoalesced
        ++free_blocks;
      } else {
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
        if (n.state != node_state::free || n.prev_free != prev || bin_of(n.size) != bin) { return false; }
        if (n.size < bin_lower_bound(bin)) { return false; }
        ++listed;
        prev = b;
      }
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
    if (b >= n_nodes || ++unused > n_nodes || nodes_[b].state != node_state::unused) { return false; }
  }
  return unused == spare_nodes_ && unused + used_blocks + free_blocks == n_nodes;
}

}  // namespace tierpool
