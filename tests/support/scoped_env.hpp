// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// scoped_env.hpp — sets (or clears) an environment variable for one scope and restores
// the previous value afterwards. Tests only; not thread-safe (environment is process-wide).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace tierpool::test {

class scoped_env {
 public:
  /// @param value New value, or nullptr to unset the variable for the scope.
  scoped_env(char const* name, char const* value) : name_(name)
  {
    if (char const* old = std::getenv(name)) { old_ = std::string(old); }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  scoped_env(scoped_env const&) = delete;
  scoped_env& operator=(scoped_env const&) = delete;
  ~scoped_env()
  {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  char const* name_;
  std::optional<std::string> old_;
};

}  // namespace tierpool::test
