// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// snapshot_json.cpp — owns the snapshot file: to_json(pool_snapshot) and its way back,
// parse_snapshot / read_snapshot, and write_snapshot (Boost.JSON). The schema (version 1)
// is documented in docs/chapters/monitoring.md, "The snapshot file"; a field added later
// that old readers may ignore keeps the version, a change of meaning or a removed field
// raises it. Derived fields ("state" of a tensor, "fragmentation" of a tier) are written
// for readers by eye and ignored when read back.
#include <tierpool/error.hpp>
#include <tierpool/snapshot.hpp>

#include <boost/json.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace tierpool {

namespace json = boost::json;

std::string_view to_string(block_state s) noexcept
{
  switch (s) {
    case block_state::free: return "free";
    case block_state::used: return "used";
    case block_state::pending: return "pending";
    case block_state::released: return "released";
  }
  return "free";
}

namespace {

// The tensor's state in one word, most telling first (for readers by eye).
std::string_view state_word(tensor_snapshot const& t) noexcept
{
  if (t.leased()) { return "leased"; }
  if (t.in_flight) { return "in_flight"; }
  if (t.dirty) { return "dirty"; }
  return "resident";
}

json::object copy_json(tensor_copy const& c)
{
  return json::object{{"tier", static_cast<std::uint32_t>(c.tier)},
                      {"valid", c.valid},
                      {"dirty", c.dirty},
                      {"in_flight", c.in_flight},
                      {"leases", c.leases},
                      {"offset", c.offset},
                      {"bytes", c.block_bytes}};
}

json::object tensor_json(tensor_snapshot const& t)
{
  json::array copies;
  for (tensor_copy const& c : t.copies) { copies.push_back(copy_json(c)); }
  return json::object{{"id", static_cast<std::uint64_t>(t.id)},
                      {"name", t.name},
                      {"bytes", t.bytes},
                      {"tenant", t.tenant},
                      {"priority", static_cast<double>(t.priority)},
                      {"home", static_cast<std::uint32_t>(t.home)},
                      {"state", state_word(t)},
                      {"dirty", t.dirty},
                      {"in_flight", t.in_flight},
                      {"prefetch_queued", t.prefetch_queued},
                      {"prefetched", t.prefetched},
                      {"leases", t.leases},
                      {"write_leases", t.write_leases},
                      {"access_count", t.access_count},
                      {"last_use", t.last_use},
                      {"free_pending", t.free_pending},
                      {"copies", std::move(copies)}};
}

json::object tier_json(tier_snapshot const& t)
{
  json::array chunks;
  for (chunk_snapshot const& c : t.chunks) {
    chunks.push_back(json::object{{"offset", c.offset}, {"bytes", c.bytes}, {"released", c.released}});
  }
  json::array blocks;
  blocks.reserve(t.blocks.size());
  for (block_snapshot const& b : t.blocks) {
    json::object o{{"offset", b.offset},
                   {"bytes", b.bytes},
                   {"chunk", b.chunk},
                   {"chunk_offset", b.chunk_offset},
                   {"state", to_string(b.state)}};
    if (b.state == block_state::used) { o["tensor"] = static_cast<std::uint64_t>(b.tensor); }
    blocks.push_back(std::move(o));
  }
  return json::object{{"index", static_cast<std::uint32_t>(t.tier)},
                      {"name", t.name},
                      {"kind", to_string(t.kind)},
                      {"capacity_bytes", t.capacity_bytes},
                      {"reserved_bytes", t.reserved_bytes},
                      {"used_bytes", t.used_bytes},
                      {"pending_bytes", t.pending_bytes},
                      {"free_bytes", t.free_bytes},
                      {"largest_free_block", t.largest_free_block},
                      {"fragmentation", t.fragmentation()},
                      {"pinned_bytes", t.pinned_bytes},
                      {"chunks", std::move(chunks)},
                      {"blocks", std::move(blocks)}};
}

// ---- reading ----

/// Reads fields of one JSON object, naming the object and the field in every error.
class reader {
 public:
  reader(json::value const& v, std::string where, std::string_view source) : where_(std::move(where)), source_(source)
  {
    if (!v.is_object()) { fail("is not an object"); }
    obj_ = &v.as_object();
  }

  [[noreturn]] void fail(std::string const& what) const
  {
    throw snapshot_error("snapshot '" + std::string(source_) + "': " + where_ + " " + what);
  }
  json::value const& at(char const* key) const
  {
    json::value const* v = obj_->if_contains(key);
    if (v == nullptr) { fail(std::string("has no field '") + key + "'"); }
    return *v;
  }
  std::uint64_t u64(char const* key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const
  {
    json::value const& v = at(key);
    std::uint64_t x = 0;
    if (v.is_uint64()) {
      x = v.get_uint64();
    } else if (v.is_int64() && v.get_int64() >= 0) {
      x = static_cast<std::uint64_t>(v.get_int64());
    } else {
      fail(std::string("field '") + key + "' is not a non-negative integer");
    }
    if (x > max) { fail(std::string("field '") + key + "' is out of range"); }
    return x;
  }
  std::uint32_t u32(char const* key) const
  {
    return static_cast<std::uint32_t>(u64(key, std::numeric_limits<std::uint32_t>::max()));
  }
  double number(char const* key) const
  {
    json::value const& v = at(key);
    if (v.is_double()) { return v.get_double(); }
    if (v.is_int64()) { return static_cast<double>(v.get_int64()); }
    if (v.is_uint64()) { return static_cast<double>(v.get_uint64()); }
    fail(std::string("field '") + key + "' is not a number");
  }
  bool boolean(char const* key) const
  {
    json::value const& v = at(key);
    if (!v.is_bool()) { fail(std::string("field '") + key + "' is not true or false"); }
    return v.get_bool();
  }
  std::string string(char const* key) const
  {
    json::value const& v = at(key);
    if (!v.is_string()) { fail(std::string("field '") + key + "' is not a string"); }
    return std::string(v.get_string());
  }
  json::array const& array(char const* key) const
  {
    json::value const& v = at(key);
    if (!v.is_array()) { fail(std::string("field '") + key + "' is not an array"); }
    return v.get_array();
  }
  [[nodiscard]] bool has(char const* key) const { return obj_->contains(key); }
  [[nodiscard]] std::string const& where() const noexcept { return where_; }

 private:
  json::object const* obj_{nullptr};
  std::string where_;
  std::string_view source_;
};

tier_kind kind_of(reader const& r)
{
  std::string const k = r.string("kind");
  for (tier_kind const c : {tier_kind::device, tier_kind::pinned_host, tier_kind::managed, tier_kind::host}) {
    if (to_string(c) == k) { return c; }
  }
  r.fail("field 'kind' is not a tier kind (device, pinned_host, managed, host): '" + k + "'");
}

block_state block_state_of(reader const& r)
{
  std::string const s = r.string("state");
  for (block_state const b : {block_state::free, block_state::used, block_state::pending, block_state::released}) {
    if (to_string(b) == s) { return b; }
  }
  r.fail("field 'state' is not a block state (free, used, pending, released): '" + s + "'");
}

tensor_snapshot tensor_of(json::value const& v, std::size_t i, std::string_view source)
{
  reader const r(v, "tensors[" + std::to_string(i) + "]", source);
  tensor_snapshot t;
  t.id = tensor_id{r.u64("id")};
  t.name = r.has("name") ? r.string("name") : std::string();
  t.bytes = static_cast<std::size_t>(r.u64("bytes"));
  t.tenant = r.u32("tenant");
  t.priority = r.has("priority") ? static_cast<float>(r.number("priority")) : 0.0F;
  t.home = tier_id{r.u32("home")};
  t.dirty = r.boolean("dirty");
  t.in_flight = r.boolean("in_flight");
  t.prefetch_queued = r.boolean("prefetch_queued");
  t.prefetched = r.boolean("prefetched");
  t.leases = r.u32("leases");
  t.write_leases = r.u32("write_leases");
  t.access_count = r.u32("access_count");
  t.last_use = r.u64("last_use");
  t.free_pending = r.has("free_pending") && r.boolean("free_pending");
  json::array const& copies = r.array("copies");
  for (std::size_t j = 0; j < copies.size(); ++j) {
    reader const c(copies[j], r.where() + ".copies[" + std::to_string(j) + "]", source);
    t.copies.push_back({.tier = tier_id{c.u32("tier")},
                        .valid = c.boolean("valid"),
                        .dirty = c.boolean("dirty"),
                        .in_flight = c.boolean("in_flight"),
                        .leases = c.u32("leases"),
                        .offset = c.u64("offset"),
                        .block_bytes = c.u64("bytes")});
  }
  return t;
}

tier_snapshot tier_of(json::value const& v, std::size_t i, std::string_view source)
{
  reader const r(v, "tiers[" + std::to_string(i) + "]", source);
  tier_snapshot t;
  t.tier = tier_id{r.u32("index")};
  t.name = r.string("name");
  t.kind = kind_of(r);
  t.capacity_bytes = r.u64("capacity_bytes");
  t.reserved_bytes = r.u64("reserved_bytes");
  t.used_bytes = r.u64("used_bytes");
  t.pending_bytes = r.u64("pending_bytes");
  t.free_bytes = r.u64("free_bytes");
  t.largest_free_block = r.u64("largest_free_block");
  t.pinned_bytes = r.u64("pinned_bytes");
  json::array const& chunks = r.array("chunks");
  for (std::size_t j = 0; j < chunks.size(); ++j) {
    reader const c(chunks[j], r.where() + ".chunks[" + std::to_string(j) + "]", source);
    t.chunks.push_back({.offset = c.u64("offset"), .bytes = c.u64("bytes"), .released = c.boolean("released")});
  }
  json::array const& blocks = r.array("blocks");
  t.blocks.reserve(blocks.size());
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    reader const b(blocks[j], r.where() + ".blocks[" + std::to_string(j) + "]", source);
    block_snapshot bs{.offset = b.u64("offset"),
                      .bytes = b.u64("bytes"),
                      .chunk = b.u32("chunk"),
                      .chunk_offset = b.u64("chunk_offset"),
                      .state = block_state_of(b),
                      .tensor = tensor_id{}};
    if (bs.state == block_state::used && b.has("tensor")) { bs.tensor = tensor_id{b.u64("tensor")}; }
    if (bs.chunk >= t.chunks.size()) { b.fail("names chunk " + std::to_string(bs.chunk) + ", which the tier does not have"); }
    t.blocks.push_back(bs);
  }
  return t;
}

}  // namespace

std::string to_json(pool_snapshot const& snapshot)
{
  json::array tensors;
  tensors.reserve(snapshot.tensors.size());
  for (tensor_snapshot const& t : snapshot.tensors) { tensors.push_back(tensor_json(t)); }
  json::array tiers;
  for (tier_snapshot const& t : snapshot.tiers) { tiers.push_back(tier_json(t)); }
  json::object root{{"version", snapshot_schema_version},
                    {"time", snapshot.time},
                    {"backend", snapshot.backend},
                    {"tensors", std::move(tensors)},
                    {"tiers", std::move(tiers)}};
  return json::serialize(root);
}

pool_snapshot parse_snapshot(std::string_view text, std::string_view source)
{
  boost::system::error_code ec;
  json::value const v = json::parse(json::string_view(text.data(), text.size()), ec);
  if (ec) { throw snapshot_error("snapshot '" + std::string(source) + "': not JSON (" + ec.message() + ")"); }
  if (!v.is_object() || !v.as_object().contains("version")) {
    throw snapshot_error("snapshot '" + std::string(source) +
                         "': not a tierpool snapshot (no \"version\" field; write one with pool::snapshot_json)");
  }
  reader const r(v, "the top level", source);
  pool_snapshot s;
  s.version = r.u32("version");
  if (s.version != snapshot_schema_version) {
    throw snapshot_error("snapshot '" + std::string(source) + "': schema version " + std::to_string(s.version) +
                         ", this tierpool reads version " + std::to_string(snapshot_schema_version));
  }
  s.time = r.u64("time");
  s.backend = r.string("backend");
  json::array const& tensors = r.array("tensors");
  s.tensors.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) { s.tensors.push_back(tensor_of(tensors[i], i, source)); }
  json::array const& tiers = r.array("tiers");
  for (std::size_t i = 0; i < tiers.size(); ++i) { s.tiers.push_back(tier_of(tiers[i], i, source)); }
  return s;
}

pool_snapshot read_snapshot(std::string const& path)
{
  std::error_code dir_ec;
  if (std::filesystem::is_directory(path, dir_ec)) {
    throw snapshot_error("cannot read snapshot '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) { throw snapshot_error("cannot read snapshot '" + path + "': " + std::strerror(errno)); }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) { throw snapshot_error("cannot read snapshot '" + path + "': " + std::strerror(errno)); }
  return parse_snapshot(text.str(), path);
}

void write_snapshot(pool_snapshot const& snapshot, std::string const& path)
{
  std::string const text = to_json(snapshot) + "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) { throw snapshot_error("cannot write snapshot '" + path + "': " + std::strerror(errno)); }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) { throw snapshot_error("cannot write snapshot '" + path + "': " + std::strerror(errno)); }
}

}  // namespace tierpool
