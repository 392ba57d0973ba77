// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_command.cpp — `tierpool trace gen | convert | stat`: thin commands over
// include/tierpool/trace.hpp and trace_gen.hpp.
//
// - gen:     a tiering workload (docs/chapters/benchmarks.md) to a native trace (text or binary, by extension).
// - convert: any readable trace (text, binary, oracleGeneral, csv) to text or binary.
// - stat:    the trace::summary figures as a table or one JSON object; --speed times reading.

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify (see bench_pool_command.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "checked_options.hpp"
#include "commands.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/trace_gen.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace tierpool::cli {

namespace po = boost::program_options;
namespace json = boost::json;
namespace tt = tierpool::trace;
using detail::format_byte_size;

namespace {

int usage_error(char const* name, std::string const& message)
{
  std::fprintf(stderr, "tierpool trace %s: %s\n", name, message.c_str());
  return 2;
}

bool parse_args(char const* name, po::options_description const& desc, po::positional_options_description const& pos,
                int argc, char** argv, po::variables_map& vm)
{
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool trace %s: %s\n\n", name, e.what());
    std::cerr << desc << '\n';
    return false;
  }
  return true;
}

// ---- csv options shared by convert and stat -----------------------------------------

struct csv_flags {
  std::string delimiter{","};
  bool no_header{false};
  std::string time_column{"0"};
  std::string id_column{"1"};
  std::string size_column{"2"};
  std::string op_column{"-1"};
  std::string default_size{"1"};
  std::string time_unit{"s"};
};

constexpr int kMaxCsvColumn = 65535;

int csv_column(char const* option, std::string const& text)
{
  return parse_checked<int>(option, text, -1, kMaxCsvColumn);
}

void add_csv_options(po::options_description& desc, csv_flags& f)
{
  desc.add_options()
    ("csv-delimiter", po::value(&f.delimiter)->default_value(f.delimiter), "csv: one-character field separator ('tab' for a tab)")
    ("csv-no-header", po::bool_switch(&f.no_header), "csv: the first line is data, not a header")
    ("csv-time-column", po::value(&f.time_column)->default_value(f.time_column), "csv: 0-based column of the time (-1: none)")
    ("csv-id-column", po::value(&f.id_column)->default_value(f.id_column), "csv: column of the object id (text ids are hashed)")
    ("csv-size-column", po::value(&f.size_column)->default_value(f.size_column), "csv: column of the size in bytes (-1: --csv-default-size)")
    ("csv-op-column", po::value(&f.op_column)->default_value(f.op_column), "csv: column of the operation r/read/get or w/write/set (-1: all reads)")
    ("csv-default-size", po::value(&f.default_size)->default_value(f.default_size), "csv: object size when there is no size column")
    ("csv-time-unit", po::value(&f.time_unit)->default_value(f.time_unit), "csv: unit of the time column: s, ms, us or ns");
}

tt::reader_options reader_options_from(std::string const& from, csv_flags const& f)
{
  tt::reader_options o;
  o.fmt = from.empty() ? tt::format::automatic : tt::parse_format(from);
  if (f.delimiter == "tab" || f.delimiter == "\\t") {
    o.csv.delimiter = '\t';
  } else if (f.delimiter.size() == 1) {
    o.csv.delimiter = f.delimiter[0];
  } else {
    throw logic_error("--csv-delimiter must be one character (or 'tab'), not '" + f.delimiter + "'");
  }
  o.csv.header = !f.no_header;
  o.csv.time_column = csv_column("--csv-time-column", f.time_column);
  o.csv.id_column = parse_checked<int>("--csv-id-column", f.id_column, 0, kMaxCsvColumn);
  o.csv.size_column = csv_column("--csv-size-column", f.size_column);
  o.csv.op_column = csv_column("--csv-op-column", f.op_column);
  o.csv.default_size = detail::parse_byte_size(f.default_size);
  if (f.time_unit == "s") {
    o.csv.time_unit_ns = 1'000'000'000;
  } else if (f.time_unit == "ms") {
    o.csv.time_unit_ns = 1'000'000;
  } else if (f.time_unit == "us") {
    o.csv.time_unit_ns = 1'000;
  } else if (f.time_unit == "ns") {
    o.csv.time_unit_ns = 1;
  } else {
    throw logic_error("unknown --csv-time-unit '" + f.time_unit + "' (valid: s, ms, us, ns)");
  }
  return o;
}

tt::format output_format(std::string const& flag, std::string const& path)
{
  if (flag.empty() || flag == "auto") { return tt::output_format_for(path); }
  auto const f = tt::parse_format(flag);
  if (f != tt::format::text && f != tt::format::binary) {
    throw logic_error("cannot write format '" + flag + "' (valid: text, binary)");
  }
  return f;
}

// True when both paths name one existing file (also through another path, a link or a
// bind mount: same device and inode).
bool same_file(std::string const& a, std::string const& b)
{
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// The output of a command that must not leave a partial file behind: a regular file (or a
// new one) is written under a temporary name in its directory and renamed over the real
// one by commit(), so a failure leaves an existing file as it was and no new one. Anything
// else (/dev/stdout, a FIFO) is written in place.
class output_file {
 public:
  explicit output_file(std::string const& path) : path_(path)
  {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path target = path;
    if (fs::is_symlink(fs::symlink_status(target, ec))) {
      target = fs::canonical(target, ec);  // replace what the link names, keep the link
      if (ec) { target = path; }
    }
    auto const st = fs::status(target, ec);
    if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
      write_path_ = path;  // a device or FIFO: no rename
      return;
    }
    final_ = target.string();
    write_path_ = final_ + ".tierpool-tmp-" + std::to_string(::getpid());
  }
  ~output_file()
  {
    if (!final_.empty() && !committed_) { std::remove(write_path_.c_str()); }
  }
  output_file(output_file const&) = delete;
  output_file& operator=(output_file const&) = delete;

  /// Where to write now.
  [[nodiscard]] std::string const& write_path() const noexcept { return write_path_; }
  /// The file is complete (and closed): put it in place.
  void commit()
  {
    if (final_.empty()) {
      committed_ = true;
      return;
    }
    std::error_code ec;
    std::filesystem::rename(write_path_, final_, ec);
    if (ec) { throw tierpool::trace_error("cannot replace '" + path_ + "': " + ec.message()); }
    committed_ = true;
  }

 private:
  std::string path_;
  std::string final_;  // empty: written in place
  std::string write_path_;
  bool committed_{false};
};

void print_workloads()
{
  std::cout << "workloads (tierpool trace gen <workload> [key=value ...]):\n";
  for (auto const& w : tt::workloads()) {
    std::cout << "\n  " << w.name << (w.random ? "  (random: depends on --seed)" : "") << "\n    " << w.summary
              << "\n";
    for (auto const& p : w.params) {
      std::string const kv = std::string(p.key) + "=" + std::string(p.default_value);
      std::printf("    %-24s %s\n", kv.c_str(), std::string(p.help).c_str());
    }
    for (auto const& pr : w.presets) {
      std::printf("    preset=%-17s %s: %s\n", std::string(pr.name).c_str(), std::string(pr.summary).c_str(),
                  std::string(pr.values).c_str());
    }
  }
}

}  // namespace

// ---- trace gen ------------------------------------------------------------------------

int trace_gen_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool trace gen <workload> [key=value ...] [-o FILE]: generate the trace of a\n"
    "tiering workload (docs/chapters/benchmarks.md), deterministically from its\n"
    "parameters and --seed.\n"
    "The output format follows the extension (.tpb binary, else text) unless --format\n"
    "says; without -o (or with -o -) the text goes to standard output. --list prints\n"
    "every workload's parameters and defaults.\n\n"
    "options");
  std::string workload;
  std::vector<std::string> params;
  std::string seed_text = "1";
  std::string output;
  std::string format_flag;
  desc.add_options()
    ("help,h", "this text")
    ("list", "list the workloads and their parameters")
    ("seed", po::value(&seed_text)->default_value(seed_text), "seed of the random workloads (kv-paging, random-reuse), 0..2^64-1")
    ("output,o", po::value(&output), "output file (.tpb: binary, else text; '-': standard output)")
    ("format", po::value(&format_flag), "text | binary (default: from the extension)")
    ("workload", po::value(&workload), "")
    ("param", po::value(&params), "");
  po::positional_options_description pos;
  pos.add("workload", 1).add("param", -1);
  po::variables_map vm;
  if (!parse_args("gen", desc, pos, argc, argv, vm)) { return 2; }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (vm.count("list") != 0) {
    print_workloads();
    return 0;
  }
  if (workload.empty()) { return usage_error("gen", "name a workload (tierpool trace gen --list shows them)"); }
  auto const seed = parse_checked<std::uint64_t>("--seed", seed_text, 0, UINT64_MAX);
  auto const gp = tt::parse_generator_params(params);

  if (output.empty() || output == "-") {
    if (!format_flag.empty() && format_flag != "text") {
      return usage_error("gen", "standard output takes text only; give -o FILE for --format " + format_flag);
    }
    std::string buf = "# tierpool-trace v1\n";
    tt::generate(workload, gp, seed, [&buf](tt::event const& e) {
      buf += tt::format_text(e);
      buf += '\n';
      if (buf.size() >= (std::size_t{1} << 20U)) {
        std::fwrite(buf.data(), 1, buf.size(), stdout);
        buf.clear();
      }
    });
    std::fwrite(buf.data(), 1, buf.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }

  auto const out_format = output_format(format_flag, output);
  output_file out(output);
  tt::writer w(out.write_path(), out_format);
  tt::summarizer acc;
  tt::generate(workload, gp, seed, [&](tt::event const& e) {
    w.write(e);
    acc.add(e);
  });
  w.close();
  out.commit();
  auto const& s = acc.result();
  std::printf("%s (seed %llu): %llu events, %llu tensors, peak live %s, %llu accesses -> %s (%s)\n", workload.c_str(),
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(s.events),
              static_cast<unsigned long long>(s.tensors), format_byte_size(s.peak_live_bytes).c_str(),
              static_cast<unsigned long long>(s.requests), output.c_str(), std::string(to_string(w.encoding())).c_str());
  return 0;
}

// ---- trace convert --------------------------------------------------------------------

int trace_convert_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool trace convert IN -o OUT: rewrite a trace (text, binary, oracleGeneral or csv)\n"
    "as a native text or binary trace. The input format is detected (header line, magic,\n"
    "extension, 24-byte records) unless --from says; the output follows OUT's extension\n"
    "(.tpb binary, else text) unless --to says.\n\n"
    "options");
  std::string input;
  std::string output;
  std::string from;
  std::string to;
  csv_flags csv;
  desc.add_options()
    ("help,h", "this text")
    ("output,o", po::value(&output), "output file")
    ("from", po::value(&from), "input format: auto | text | binary | oracle_general | csv")
    ("to", po::value(&to), "output format: text | binary (default: from the extension)")
    ("input", po::value(&input), "");
  add_csv_options(desc, csv);
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!parse_args("convert", desc, pos, argc, argv, vm)) { return 2; }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (input.empty()) { return usage_error("convert", "name the input trace"); }
  if (output.empty()) { return usage_error("convert", "give the output file with -o"); }
  if (same_file(input, output)) {
    return usage_error("convert", "the output '" + output + "' is the input '" + input +
                                    "' (the same file): write to another file, then rename it");
  }
  auto const out_format = output_format(to, output);
  auto r = tt::open_reader(input, reader_options_from(from, csv));
  output_file out(output);
  tt::writer w(out.write_path(), out_format);
  std::vector<tt::event> batch(4096);
  for (;;) {
    std::size_t const n = r->next_batch(batch);
    for (std::size_t i = 0; i < n; ++i) { w.write(batch[i]); }
    if (n < batch.size()) { break; }
  }
  w.close();
  out.commit();
  std::printf("%llu events: %s (%s) -> %s (%s)\n", static_cast<unsigned long long>(w.events_written()), input.c_str(),
              std::string(to_string(r->encoding())).c_str(), output.c_str(),
              std::string(to_string(w.encoding())).c_str());
  return 0;
}

// ---- trace stat -----------------------------------------------------------------------

int trace_stat_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool trace stat FILE: events per kind, requests (reads / read-writes / write-discards),\n"
    "unique objects, tensors, working set (each id at its first size), peak live bytes, the\n"
    "eviction hints (recomputable allocates, their bytes and recompute time; lossy-ok\n"
    "allocates and bytes), and the well-formedness counters (accesses, frees and prefetches of ids that are not live).\n"
    "--speed instead times reading alone (events per second over --passes passes).\n\n"
    "options");
  std::string input;
  std::string from;
  bool as_json = false;
  bool speed = false;
  std::string passes_text = "3";
  csv_flags csv;
  desc.add_options()
    ("help,h", "this text")
    ("from", po::value(&from), "input format: auto | text | binary | oracle_general | csv")
    ("json", po::bool_switch(&as_json), "print one JSON object")
    ("speed", po::bool_switch(&speed), "time reading only (no statistics); figures vary between runs")
    ("passes", po::value(&passes_text)->default_value(passes_text),
     "--speed: passes over the file, 1..1000; the best is reported (a pipe is read once: the default is then 1)")
    ("input", po::value(&input), "");
  add_csv_options(desc, csv);
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  if (!parse_args("stat", desc, pos, argc, argv, vm)) { return 2; }
  if (vm.count("help") != 0) {
    std::cout << desc << '\n';
    return 0;
  }
  if (input.empty()) { return usage_error("stat", "name the trace"); }
  auto passes = parse_checked<unsigned>("--passes", passes_text, 1, 1000);
  auto const ro = reader_options_from(from, csv);

  if (speed) {
    std::error_code ec;
    if (passes > 1 && !std::filesystem::is_regular_file(input, ec) && !std::filesystem::is_directory(input, ec)) {
      if (vm["passes"].defaulted()) {
        passes = 1;  // a pipe can be read once: the default adapts, an explicit count is refused
      } else {
        return usage_error("stat", "--passes " + std::to_string(passes) + " reads '" + input +
                                     "' more than once, but it is not a regular file (a pipe is read once: --passes 1)");
      }
    }
    double best = 0.0;
    std::uint64_t events = 0;
    std::vector<tt::event> batch(4096);
    for (unsigned pass = 0; pass < passes; ++pass) {
      auto const t0 = std::chrono::steady_clock::now();
      auto r = tt::open_reader(input, ro);
      std::uint64_t n = 0;
      std::uint64_t check = 0;  // keeps the reads observable
      for (;;) {
        std::size_t const got = r->next_batch(batch);
        for (std::size_t i = 0; i < got; ++i) { check += batch[i].tensor; }
        n += got;
        if (got < batch.size()) { break; }
      }
      double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      events = n;
      asm volatile("" : : "r"(check));  // the loop's loads must not be dropped
      best = pass == 0 ? s : std::min(best, s);
    }
    double const rate = best > 0.0 ? static_cast<double>(events) / best : 0.0;
    if (as_json) {
      std::cout << json::serialize(json::object{{"file", input}, {"events", events}, {"best_seconds", best},
                                                {"events_per_second", rate}, {"passes", passes}})
                << '\n';
    } else {
      std::printf("read %llu events in %.6f s (best of %u): %.1f M events/s\n",
                  static_cast<unsigned long long>(events), best, passes, rate / 1e6);
    }
    return 0;
  }

  // One open: the format comes from the reader, which detected it from the stream's first
  // bytes (a FIFO or a pipe can be read only once).
  auto r = tt::open_reader(input, ro);
  auto const fmt = r->encoding();
  tt::summarizer acc;
  {
    std::vector<tt::event> batch(4096);
    for (;;) {
      std::size_t const n = r->next_batch(batch);
      for (std::size_t i = 0; i < n; ++i) { acc.add(batch[i]); }
      if (n < batch.size()) { break; }
    }
  }
  auto const& s = acc.result();
  auto kind_name = [](std::size_t k) { return to_string(static_cast<tt::event_kind>(k)); };
  if (as_json) {
    json::object by_kind;
    for (std::size_t k = 0; k < s.events_by_kind.size(); ++k) { by_kind[kind_name(k)] = s.events_by_kind[k]; }
    json::object o{
      {"file", input},
      {"format", std::string(to_string(fmt))},
      {"events", s.events},
      {"events_by_kind", std::move(by_kind)},
      {"requests", s.requests},
      {"reads", s.reads},
      {"read_writes", s.read_writes},
      {"write_discards", s.write_discards},
      {"objects", s.objects},
      {"tensors", s.tensors},
      {"working_set_bytes", s.working_set_bytes},
      {"allocated_bytes", s.allocated_bytes},
      {"peak_live_bytes", s.peak_live_bytes},
      {"live_at_end", s.live_at_end},
      {"live_bytes_at_end", s.live_bytes_at_end},
      {"compute_ns", s.compute_ns},
      {"compute_streams", s.compute_streams},
      {"busiest_stream_compute_ns", s.busiest_stream_compute_ns},
      {"recomputable_tensors", s.recomputable_tensors},
      {"recomputable_bytes", s.recomputable_bytes},
      {"recompute_ns", s.recompute_ns},
      {"lossy_ok_tensors", s.lossy_ok_tensors},
      {"lossy_ok_bytes", s.lossy_ok_bytes},
      {"first_time_ns", s.first_time_ns},
      {"last_time_ns", s.last_time_ns},
      {"accesses_not_live", s.accesses_not_live},
      {"frees_not_live", s.frees_not_live},
      {"allocates_live", s.allocates_live},
      {"prefetches_not_live", s.prefetches_not_live},
      {"discards_not_live", s.discards_not_live},
      {"reads_after_discard", s.reads_after_discard},
      {"saturated", s.saturated},
    };
    std::cout << json::serialize(o) << '\n';
    return 0;
  }
  auto line = [](char const* label, std::uint64_t v) {
    std::printf("  %-22s %llu\n", label, static_cast<unsigned long long>(v));
  };
  auto bytes_line = [](char const* label, std::uint64_t v) {
    std::printf("  %-22s %llu (%s)\n", label, static_cast<unsigned long long>(v), format_byte_size(v).c_str());
  };
  std::printf("trace %s (%s)\n", input.c_str(), std::string(to_string(fmt)).c_str());
  line("events", s.events);
  for (std::size_t k = 0; k < s.events_by_kind.size(); ++k) {
    std::printf("    %-20s %llu\n", std::string(kind_name(k)).c_str(), static_cast<unsigned long long>(s.events_by_kind[k]));
  }
  line("requests", s.requests);
  line("  reads", s.reads);
  line("  read-writes", s.read_writes);
  line("  write-discards", s.write_discards);
  line("unique objects", s.objects);
  line("tensors", s.tensors);
  bytes_line("working set", s.working_set_bytes);
  bytes_line("peak live", s.peak_live_bytes);
  bytes_line("allocated", s.allocated_bytes);
  line("live at end", s.live_at_end);
  std::printf("  %-22s %.6f s\n", "compute", static_cast<double>(s.compute_ns) / 1e9);
  if (s.compute_streams > 1) {  // streams run side by side: the busiest one bounds the run (replay's ideal)
    std::printf("    %-20s %.6f s (of %llu streams)\n", "busiest stream", static_cast<double>(s.busiest_stream_compute_ns) / 1e9,
                static_cast<unsigned long long>(s.compute_streams));
  }
  std::printf("  %-22s %.3f s\n", "time span",
              static_cast<double>(s.last_time_ns - s.first_time_ns) / 1e9);
  line("recomputable", s.recomputable_tensors);
  bytes_line("  bytes", s.recomputable_bytes);
  std::printf("  %-22s %.6f s\n", "  recompute", static_cast<double>(s.recompute_ns) / 1e9);
  line("lossy ok", s.lossy_ok_tensors);
  bytes_line("  bytes", s.lossy_ok_bytes);
  if (s.saturated) {
    std::printf("  %-22s a sum passed 2^64 - 1 and shows 18446744073709551615 (saturated, not wrapped)\n", "note");
  }
  std::uint64_t const anomalies = s.accesses_not_live + s.frees_not_live + s.allocates_live + s.prefetches_not_live +
                                  s.discards_not_live + s.reads_after_discard;
  if (anomalies == 0) {
    std::printf("  %-22s yes\n", "well-formed");
  } else {
    std::printf("  %-22s no: %llu accesses, %llu frees, %llu prefetches, %llu discards of ids not live; %llu allocates "
                "of live ids; %llu reads of discarded ids\n",
                "well-formed", static_cast<unsigned long long>(s.accesses_not_live),
                static_cast<unsigned long long>(s.frees_not_live), static_cast<unsigned long long>(s.prefetches_not_live),
                static_cast<unsigned long long>(s.discards_not_live), static_cast<unsigned long long>(s.allocates_live),
                static_cast<unsigned long long>(s.reads_after_discard));
  }
  return 0;
}

}  // namespace tierpool::cli
