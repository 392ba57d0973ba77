// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// snapshot_command.cpp — `tierpool snapshot view FILE.json [FILE.json ...] [--svg OUT.svg]`:
// a thin command over include/tierpool/snapshot.hpp. Reads snapshots written by
// pool::snapshot_json() / write_snapshot() (the demo's --snapshot) and prints, per file and
// tier, used / pending / free bytes, the largest free block and the fragmentation, and
// where the tensors' newest copies are; with --svg it draws every tier's layout over the
// files, in the order given (snapshot_svg). An unreadable or corrupt file is an error
// naming it (exit status 2, from main).

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify (see bench_pool_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "commands.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/snapshot.hpp>

#include <boost/program_options.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;

namespace {

std::string bytes_text(std::uint64_t b) { return detail::format_byte_size(b); }

void print_summary(std::string const& file, pool_snapshot const& s)
{
  std::uint64_t bytes = 0;
  for (tensor_snapshot const& t : s.tensors) { bytes += t.bytes; }
  std::printf("%s: %zu tensors (%s), backend %s, time %.3f ms\n", file.c_str(), s.tensors.size(),
              bytes_text(bytes).c_str(), s.backend.c_str(), static_cast<double>(s.time) * 1e-6);
  std::printf("  %-4s %-14s %11s %11s %11s %11s %11s %6s %7s %8s %6s\n", "tier", "name", "capacity", "used", "pending",
              "free", "largest", "frag", "blocks", "tensors", "dirty");
  for (tier_snapshot const& t : s.tiers) {
    std::size_t used_blocks = 0;
    for (block_snapshot const& b : t.blocks) { used_blocks += b.state == block_state::used ? 1U : 0U; }
    std::size_t home = 0;
    std::size_t dirty = 0;
    for (tensor_snapshot const& ts : s.tensors) {
      if (ts.home == t.tier) {
        ++home;
        dirty += ts.dirty ? 1U : 0U;
      }
    }
    std::string const blocks = std::to_string(used_blocks) + "/" + std::to_string(t.blocks.size());
    std::printf("  %-4u %-14s %11s %11s %11s %11s %11s %5.1f%% %7s %8zu %6zu\n", static_cast<unsigned>(t.tier),
                t.name.c_str(), bytes_text(t.capacity_bytes).c_str(), bytes_text(t.used_bytes).c_str(),
                bytes_text(t.pending_bytes).c_str(), bytes_text(t.free_bytes).c_str(),
                bytes_text(t.largest_free_block).c_str(), 100.0 * t.fragmentation(), blocks.c_str(), home, dirty);
  }
}

}  // namespace

int snapshot_view_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool snapshot view FILE.json [FILE.json ...]: pool snapshots (pool::snapshot_json, the demo's\n"
    "--snapshot) per tier: used, pending and free bytes, the largest free block, fragmentation\n"
    "(1 - largest free / free), used blocks of all blocks, tensors whose newest copy is there and how\n"
    "many of them are dirty. --svg draws each tier's layout over the files, in the order given\n"
    "(time across, offset down, used blocks coloured by tensor, free space blank).\n\n"
    "options");
  std::vector<std::string> inputs;
  std::string svg;
  std::string title;
  desc.add_options()
    ("help,h", "this text")
    ("svg", po::value(&svg), "write the layout plot to this SVG file (the text summary is not printed)")
    ("title", po::value(&title), "the plot's title (default: the files' names)")
    ("input", po::value(&inputs), "");
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool snapshot view: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "tierpool snapshot view: name at least one snapshot file (see --help)\n");
    return 2;
  }
  std::vector<pool_snapshot> series;
  series.reserve(inputs.size());
  for (std::string const& f : inputs) { series.push_back(read_snapshot(f)); }  // snapshot_error: exit 2 in main

  if (svg.empty()) {
    for (std::size_t i = 0; i < series.size(); ++i) {
      if (i != 0) { std::printf("\n"); }
      print_summary(inputs[i], series[i]);
    }
    return 0;
  }
  if (title.empty()) {
    title = inputs.size() == 1 ? "tierpool snapshot " + inputs.front()
                               : "tierpool snapshots " + inputs.front() + " ... " + inputs.back();
  }
  std::string const text = snapshot_svg(series, title);
  std::ofstream out(svg, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) { throw std::runtime_error("cannot write '" + svg + "'"); }
  std::printf("wrote %s: %zu tiers over %zu snapshot%s\n", svg.c_str(), series.back().tiers.size(), series.size(),
              series.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace tierpool::cli
