// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file record_ref.hpp
 * @brief tierpool::detail::record_ref: an owning reference to a pool's tensor record,
 *        counted in the record itself (Note [Records count their references], records.cpp).
 *
 * Internal to the library; public only because tierpool::tensor holds one.
 */
#pragma once

#include <cstddef>
#include <utility>

#include <tierpool/export.hpp>

namespace tierpool::detail {

struct tensor_record;

/// @brief Add a reference to `r` (not null).
TIERPOOL_EXPORT void record_retain(tensor_record* r) noexcept;
/// @brief Drop a reference to `r` (not null); the last one destroys the record.
TIERPOOL_EXPORT void record_release(tensor_record* r) noexcept;

/**
 * @brief Shared ownership of a tensor record, like std::shared_ptr but one word wide and
 *        with the count inside the record (no control block). Copying adds a reference,
 *        destroying drops one. Thread safety: as std::shared_ptr (the count is atomic; one
 *        object is externally synchronized).
 */
class record_ref {
 public:
  record_ref() noexcept = default;
  record_ref(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): like shared_ptr
  /// @brief Take over one reference already counted in `r` (make_record's first).
  static record_ref adopt(tensor_record* r) noexcept
  {
    record_ref out;
    out.p_ = r;
    return out;
  }
  record_ref(record_ref const& o) noexcept : p_(o.p_)
  {
    if (p_ != nullptr) { record_retain(p_); }
  }
  record_ref(record_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  record_ref& operator=(record_ref const& o) noexcept
  {
    record_ref(o).swap(*this);
    return *this;
  }
  record_ref& operator=(record_ref&& o) noexcept
  {
    record_ref(std::move(o)).swap(*this);
    return *this;
  }
  record_ref& operator=(std::nullptr_t) noexcept
  {
    reset();
    return *this;
  }
  ~record_ref() { reset(); }

  /// @brief Drop the reference (the pointer becomes null).
  void reset() noexcept
  {
    if (tensor_record* const p = std::exchange(p_, nullptr)) { record_release(p); }
  }
  void swap(record_ref& o) noexcept { std::swap(p_, o.p_); }
  [[nodiscard]] tensor_record* get() const noexcept { return p_; }
  [[nodiscard]] tensor_record& operator*() const noexcept { return *p_; }
  [[nodiscard]] tensor_record* operator->() const noexcept { return p_; }
  [[nodiscard]] explicit operator bool() const noexcept { return p_ != nullptr; }
  friend bool operator==(record_ref const& a, record_ref const& b) noexcept { return a.p_ == b.p_; }
  friend bool operator==(record_ref const& a, std::nullptr_t) noexcept { return a.p_ == nullptr; }

 private:
  tensor_record* p_{nullptr};
};

}  // namespace tierpool::detail
