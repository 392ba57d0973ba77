// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// svg.cpp — the pieces every SVG plot of tierpool shares (util/svg.hpp): its header,
// escaping, pixel numbers and axis ticks.
#include "util/svg.hpp"

#include <cmath>
#include <cstdio>

namespace tierpool::detail {

std::string xml_escape(std::string_view s)
{
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_number(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

void svg_open(std::string& out, double width, double height, std::string_view title)
{
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" +
         svg_number(height) + "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) + "\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + svg_number(width / 2) +
         "\" y=\"28\" text-anchor=\"middle\" font-family=\"sans-serif\" font-size=\"16\">" + xml_escape(title) +
         "</text>\n";
}

std::vector<double> svg_ticks(double max, bool binary)
{
  if (!(max > 0.0)) { max = 1.0; }
  double step = 0.0;
  if (binary && max >= 4.0) {
    step = std::exp2(std::ceil(std::log2(max / 5.0)));
  } else {
    double const raw = max / 5.0;
    double const mag = std::pow(10.0, std::floor(std::log10(raw)));
    double const f = raw / mag;
    step = (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
  }
  std::vector<double> t;
  for (double v = 0.0; v < max + step * 0.999; v += step) { t.push_back(v); }
  if (t.size() < 2) { t.push_back(step); }
  return t;
}

}  // namespace tierpool::detail
