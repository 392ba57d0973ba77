// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_report.hpp — `tierpool suite report`'s pieces: suite bundles as read from their
// files (docs/chapters/suite.md, suite version 1), the comparison table shared by the text,
// CSV and HTML outputs, and the outputs themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tierpool::cli::suite {

/// One workload parameter: its key, its value as text (numbers in shortest form, 1.0 is
/// "1") and, when the value is a number, the number.
struct param {
  std::string key;
  std::string text;
  std::optional<double> number;
};

/// One figure of a workload (value = median of reps repetitions, min/max their spread).
struct figure {
  std::string name;
  std::string unit;
  double value = 0.0;
  double min = 0.0;
  double max = 0.0;
  std::int64_t reps = 0;
  std::vector<param> params;  // in the bundle's order
  std::string identity;       // name and params sorted by key: equal in two bundles = same figure
};

/// How to draw a workload (optional in a bundle).
struct plot_spec {
  std::string x;
  std::string x_label;
  bool x_log = false;
  std::vector<std::string> split;
  std::vector<std::string> series;
};

struct workload {
  std::string name;
  std::string title;
  std::optional<plot_spec> plot;
  std::vector<figure> figures;
};

struct skipped_workload {
  std::string workload;
  std::string reason;
};

/// One bundle: one device's suite results.
struct bundle {
  std::string file;   // the path it was read from
  std::string label;  // its column's heading: device id, "(sim)", the file name when ids repeat
  std::int64_t suite_version = 0;
  std::string suite_preset;
  std::string created_utc;
  std::string device_id;
  std::string device_name;
  bool simulated = false;
  std::optional<std::uint64_t> memory_bytes;
  std::string link;  // the link's name
  std::optional<std::pair<double, double>> kernel_roofline;  // device.kernel_roofline: FLOP/s, bytes/s
  std::string tierpool_version;
  std::string machine;  // hostname and cpu
  std::vector<workload> workloads;
  std::vector<skipped_workload> skipped;
};

/**
 * @brief Reads and checks one bundle.
 * @throws tierpool::logic_error naming the file: missing, unreadable, not JSON (with the
 *         parse error), not a tierpool suite bundle, or a required field missing or of the
 *         wrong type (named by its path, e.g. workloads[1].figures[0].unit).
 */
[[nodiscard]] bundle read_bundle(std::string const& path);

/// Sets each bundle's label: its device id, " (sim)" when simulated, and " [file name]"
/// when another bundle has the same device id.
void label_bundles(std::vector<bundle>& bundles);

/**
 * @brief The baseline's index: `spec` empty is 0, else a 0-based index or a device id.
 * @throws tierpool::logic_error when the index is out of range or no bundle has that id
 */
[[nodiscard]] std::size_t resolve_baseline(std::span<bundle const> bundles, std::string const& spec);

// ---- the comparison table, shared by every output ----------------------------------

/// One figure identity of a workload across the bundles.
struct row {
  figure const* first = nullptr;          // its first occurrence (name, params in order)
  std::vector<figure const*> cells;       // per bundle; nullptr = absent there
  std::vector<std::optional<double>> ratios;  // per bundle: value / baseline value
};

/// One workload across the bundles.
struct table {
  std::string name;
  std::string title;
  std::optional<plot_spec> plot;  // the first bundle's that has one
  std::vector<std::string> param_keys;  // every key of the workload's figures, first-seen order
  std::vector<row> rows;
};

/// One table per workload name (first-seen order), rows in first-seen order.
[[nodiscard]] std::vector<table> build_tables(std::span<bundle const> bundles, std::size_t baseline);

/// A table as display text: the heading line and one line per row, the same columns for
/// the text and HTML outputs (figure, each param key, each bundle, each ratio).
struct grid {
  std::vector<std::string> heading;
  std::vector<std::vector<std::string>> cells;
  std::size_t first_value_column = 0;  // columns from here on are numbers (right-aligned)
};
[[nodiscard]] grid make_grid(table const& t, std::span<bundle const> bundles, std::size_t baseline);

// ---- formatting ------------------------------------------------------------------------

/// A number for people: 4 significant digits, whole numbers above 10^4 as they are.
[[nodiscard]] std::string format_number(double v);
/// A value with its unit: "21.3 GB/s"; unit "B" in binary units ("61.1 MiB"), "bool" as true/false.
[[nodiscard]] std::string format_value(double v, std::string const& unit);
/// format_value or, with a spread, "21.3 GB/s (21.1..21.4)".
[[nodiscard]] std::string format_cell(figure const& f);
/// A ratio: "1.234x"; empty without one.
[[nodiscard]] std::string format_ratio(std::optional<double> r);
/// A parameter for people: byte sizes ("bytes", "*_bytes") as "4 KiB", else its text.
[[nodiscard]] std::string format_param(param const& p);
/// A byte count in binary units, exact where it is a whole number of them: "4 KiB", "1.5 MiB".
[[nodiscard]] std::string format_bytes(double bytes);
/// True for a byte-size parameter key ("bytes", "*_bytes").
[[nodiscard]] bool is_byte_key(std::string const& key);
/// The value of `key` in `f`'s params, or nullptr.
[[nodiscard]] param const* find_param(figure const& f, std::string const& key);

// ---- outputs ------------------------------------------------------------------------------

[[nodiscard]] std::string to_text(std::span<bundle const> bundles, std::size_t baseline, std::span<table const> tables);
[[nodiscard]] std::string to_csv(std::span<bundle const> bundles, std::span<table const> tables);
[[nodiscard]] std::string to_html(std::span<bundle const> bundles, std::size_t baseline, std::span<table const> tables);
/// What one plot shows: one figure name (one unit on the y axis) at one value of the
/// plot's split parameters ("pair=a;..." text, join_params).
struct plot_group {
  std::string figure;
  std::string split;
  friend bool operator==(plot_group const&, plot_group const&) = default;
};
/// The distinct (figure name, split values) of `t`'s rows, first-seen order; none without a plot.
[[nodiscard]] std::vector<plot_group> plot_groups(table const& t);
/// One SVG plot of `t`'s rows in group `g`; empty when none has a numeric x.
[[nodiscard]] std::string to_svg(table const& t, std::span<bundle const> bundles, plot_group const& g);
/// The values of `keys` in `f` as "k=v;k=v" text (missing keys read "k=").
[[nodiscard]] std::string join_params(figure const& f, std::span<std::string const> keys);

}  // namespace tierpool::cli::suite
