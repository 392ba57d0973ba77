// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// device_facts.hpp — what `tierpool info` and the suite's machine fingerprint say about a
// GPU beyond backend_caps' numbers: CUDA versions as "13.0", and the PCIe link the device
// sits on, read from sysfs by the PCI bus id (no NVML: the driver's library is not linked).
#pragma once

#include <tierpool/backend.hpp>

#include <boost/json.hpp>

#include <fstream>
#include <string>

namespace tierpool::cli {

/// "13.0" for 13000 (CUDA's 1000 * major + 10 * minor); null for 0 (unknown, or sim).
inline boost::json::value cuda_version_json(int v)
{
  if (v <= 0) { return nullptr; }
  return boost::json::string(std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10));
}

/// The first line of a sysfs file; empty when unreadable.
inline std::string sysfs_line(std::string const& path)
{
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

/// {"pci_bus_id", "pcie": {"speed", "width", "max_speed", "max_width"}} for a CUDA device
/// (pcie null where sysfs does not say, as in some virtual machines); an empty object for sim.
inline boost::json::object pcie_json(backend_caps const& caps)
{
  boost::json::object o;
  if (caps.pci_bus_id.empty()) { return o; }
  o["pci_bus_id"] = caps.pci_bus_id;
  std::string const dir = "/sys/bus/pci/devices/" + caps.pci_bus_id + "/";
  std::string const speed = sysfs_line(dir + "current_link_speed");
  std::string const width = sysfs_line(dir + "current_link_width");
  if (speed.empty() && width.empty()) {
    o["pcie"] = nullptr;
    return o;
  }
  o["pcie"] = boost::json::object{{"speed", speed},
                                  {"width", width},
                                  {"max_speed", sysfs_line(dir + "max_link_speed")},
                                  {"max_width", sysfs_line(dir + "max_link_width")}};
  return o;
}

}  // namespace tierpool::cli
