// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file error.hpp
 * @brief Status codes (below the API) and the exception hierarchy (at the API).
 *
 * Backends, policies and the arena never throw on expected paths: they return a
 * `status`, a bool or an optional. The public API turns failures into exceptions:
 *
 * | exception                 | base               | meaning                                  |
 * |---------------------------|--------------------|------------------------------------------|
 * | tierpool::logic_error     | std::logic_error   | a broken precondition (misuse)           |
 * | tierpool::backend_error   | std::runtime_error | a device / driver / injected failure     |
 * | tierpool::bad_alloc       | std::bad_alloc     | could not allocate                       |
 * | tierpool::out_of_memory   | tierpool::bad_alloc| every step of the OOM ladder failed      |
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/// @brief Result of a backend primitive. `ok` is zero.
enum class status : std::uint8_t {
  ok = 0,          ///< success
  not_ready,       ///< an event or stream has not completed yet (not an error)
  invalid_value,   ///< bad argument: null pointer, zero bytes, unknown handle
  out_of_memory,   ///< the backend could not provide the memory
  not_supported,   ///< the backend or device lacks this capability
  no_device,       ///< no usable device (no driver, no GPU)
  device_error,    ///< the device or driver reported a failure
  injected_fault,  ///< a fault injected by the sim backend's fault options
  /// The device is gone: a sticky error (on CUDA an illegal address, a launch failure, an
  /// uncorrectable ECC error, ...). Its memory is lost and every later call fails.
  device_lost,
  /// A storage tier's file I/O failed (a failed, short or torn write, no space, a failed
  /// read, a checksum mismatch); the pool throws tierpool::storage_error with the details.
  io_error,
};

/// @brief Lower-case name of a status ("ok", "out_of_memory", ...).
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(status s) noexcept;

/**
 * @brief A broken precondition: misuse of the API (double free, foreign pointer, bad option).
 *
 * what() is for the user: it names the call and what was wrong, never a source path. A
 * check inside tierpool (TIERPOOL_EXPECTS) also records where it is, for bug reports.
 */
class TIERPOOL_EXPORT logic_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
  /// @brief With the location of the check that failed (`file` is a string literal).
  logic_error(std::string const& what_arg, char const* file, int line)
      : std::logic_error(what_arg), file_(file), line_(line)
  {
  }
  /// @brief File name (no directories) of the failed check; empty when not recorded.
  [[nodiscard]] std::string_view file() const noexcept
  {
    std::string_view f = file_ != nullptr ? file_ : "";
    if (auto const slash = f.find_last_of("/\\"); slash != std::string_view::npos) { f.remove_prefix(slash + 1); }
    return f;
  }
  /// @brief Line of the failed check; 0 when not recorded.
  [[nodiscard]] int line() const noexcept { return line_; }

 private:
  char const* file_{nullptr};
  int line_{0};
};

/// @brief A failure reported by a backend (device, driver, or an injected fault).
class TIERPOOL_EXPORT backend_error : public std::runtime_error {
 public:
  /**
   * @brief Build from the failing status and a message saying what was attempted.
   * @param code The status the backend returned.
   * @param what_arg Description; the status name is appended.
   */
  backend_error(status code, std::string const& what_arg);

  /// @brief The status the backend returned.
  [[nodiscard]] status code() const noexcept { return code_; }

 private:
  status code_;
};

/**
 * @brief The device was lost (status::device_lost): what was only there is gone.
 *
 * Thrown by the pool call that found the device lost, and by every later call that needs
 * the device or a lost tensor. lost_tensors() names the tensors whose only valid copy
 * was in device memory (device or managed tiers) or still being copied: their bytes are
 * gone. Every other tensor keeps its host copy: acquire_host() and free() still work on it,
 * and close() frees the pool without waiting on the device. Tensors made with
 * tensor_options::write_through survive unless their last write was still being
 * written back.
 */
class TIERPOOL_EXPORT device_lost : public backend_error {
 public:
  /**
   * @param what_arg What failed and why (the tensors lost are appended).
   * @param lost The lost tensors, by id.
   * @param names Their names (tensor_options::name; may be empty), in the same order.
   */
  device_lost(std::string const& what_arg, std::vector<tensor_id> lost, std::vector<std::string> names);
  /// @brief The tensors whose bytes are gone, by id.
  [[nodiscard]] std::vector<tensor_id> const& lost_tensors() const noexcept { return lost_; }
  /// @brief Their names, in the order of lost_tensors().
  [[nodiscard]] std::vector<std::string> const& lost_names() const noexcept { return names_; }

 private:
  std::vector<tensor_id> lost_;
  std::vector<std::string> names_;
};

/// @brief What went wrong with a storage tier (storage_error::failure()).
enum class storage_failure : std::uint8_t {
  bad_capacity,        ///< the capacity is 0 or below the file's block size
  bad_path,            ///< no path, or a path that is neither a directory, a block device nor a new file
  missing_path,        ///< the directory (or a new file's directory) does not exist
  permission,          ///< the directory or device may not be written (or the file system is read-only)
  no_space,            ///< not enough free space for the capacity (statvfs), or ENOSPC on a write
  direct_unsupported,  ///< O_DIRECT was required (storage_direct::on) and the file system refuses it
  engine_unavailable,  ///< io_uring was required and is not built in or the kernel refuses it
  write_failed,        ///< a write returned an error
  short_write,         ///< a write wrote fewer bytes than asked
  torn_write,          ///< a write reported every byte but the read-back's checksum differs
  read_failed,         ///< a read returned an error or fewer bytes than asked
  corrupt,             ///< a read's checksum differs from the one the write recorded
};

/// @brief Lower-case name of a storage failure ("no_space", "torn_write", ...).
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(storage_failure f) noexcept;

/**
 * @brief A storage tier failed: bad configuration at pool construction, or a file I/O
 *        error later (docs/chapters/tiers.md, "The storage tier"). code() is
 *        status::io_error; failure() says what went wrong, errno_value() the system's
 *        errno when one was involved (0 otherwise).
 *
 * A failed write never loses a tensor: its copy above stays (the eviction fails). A failed
 * read leaves the tensor's storage copy as it was.
 */
class TIERPOOL_EXPORT storage_error : public backend_error {
 public:
  /**
   * @param failure What went wrong.
   * @param what_arg The diagnosis (the path, the operation, what would help).
   * @param errno_value The errno involved, 0 if none.
   */
  storage_error(storage_failure failure, std::string const& what_arg, int errno_value = 0);
  /// @brief What went wrong.
  [[nodiscard]] storage_failure failure() const noexcept { return failure_; }
  /// @brief The errno involved (0 if none).
  [[nodiscard]] int errno_value() const noexcept { return errno_; }

 private:
  storage_failure failure_;
  int errno_;
};

/// @brief Could not allocate. Carries a full message (std::bad_alloc's is fixed).
class TIERPOOL_EXPORT bad_alloc : public std::bad_alloc {
 public:
  /// @param what_arg The diagnosis to return from what().
  explicit bad_alloc(std::string what_arg);
  /// @brief The diagnosis given at construction.
  [[nodiscard]] char const* what() const noexcept override;

 private:
  std::string what_;
};

/**
 * @brief Why a request found no room (out_of_memory::cause()), the first word of the
 *        diagnosis' "cause:".
 */
enum class oom_cause : std::uint8_t {
  capacity,       ///< larger than the tier, or what is resident cannot be evicted (dirty, no room below)
  pinned,         ///< live leases pin so much of the tier that the request cannot fit beside them
  fragmentation,  ///< enough free bytes, but no free block is large enough
  busy,           ///< other threads held the tensors eviction needed for the whole retry bound
  quota,          ///< a tenant's quota (tierpool::quota_exceeded)
  share,          ///< a tenant's hard share of the tier (tenant_options::hard_shares)
};

/// @brief Lower-case name of a cause ("capacity", "pinned", ...).
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(oom_cause c) noexcept;

/**
 * @brief The figures of the tier at the moment an out_of_memory was thrown (zero where
 *        unknown, e.g. for a request larger than every tier).
 */
struct oom_figures {
  oom_cause cause{oom_cause::capacity};  ///< why
  std::size_t capacity_bytes{0};         ///< the tier's capacity (its budget)
  std::size_t resident_bytes{0};         ///< bytes of the copies resident there
  std::size_t pinned_bytes{0};           ///< bytes pinned by live leases
  std::size_t in_flight_bytes{0};        ///< vacated blocks still awaiting their last uses
  std::size_t busy_bytes{0};             ///< bytes of victims locked by other threads (cause busy)
  std::size_t free_bytes{0};             ///< free bytes, the unreserved budget included
  std::size_t largest_free_block{0};     ///< the largest block the tier could hand out now
  std::uint32_t attempts{0};             ///< times the request was tried (busy retries included)
};

/**
 * @brief Every step of the out-of-memory ladder failed for a request.
 *
 * The message is a diagnosis: requested bytes, tier, capacity, what is resident, pinned
 * and in flight, the largest free block, and the cause with the option that would help.
 * The same figures are in figures(); cause() says why in one word.
 */
class TIERPOOL_EXPORT out_of_memory : public bad_alloc {
 public:
  /**
   * @param what_arg  The diagnosis.
   * @param tier      The tier that could not satisfy the request.
   * @param requested Requested bytes.
   * @param figures   The tier's figures when it was thrown (cause capacity by default).
   */
  out_of_memory(std::string what_arg, tier_id tier, std::size_t requested, oom_figures figures = {});
  /// @brief Tier that could not satisfy the request.
  [[nodiscard]] tier_id tier() const noexcept { return tier_; }
  /// @brief Requested bytes.
  [[nodiscard]] std::size_t requested() const noexcept { return requested_; }
  /// @brief Why (the diagnosis' cause).
  [[nodiscard]] oom_cause cause() const noexcept { return figures_.cause; }
  /// @brief The tier's figures when it was thrown.
  [[nodiscard]] oom_figures const& figures() const noexcept { return figures_; }

 private:
  tier_id tier_;
  std::size_t requested_;
  oom_figures figures_;
};

/**
 * @brief An allocation would take a tenant's live tensor bytes over its quota
 *        (pool::set_quota, pool_options::tenant_quotas). Nothing was allocated.
 *
 * An out_of_memory whose cause is "quota": code that handles running out of memory
 * handles it too; code that needs to tell it apart catches this type.
 */
class TIERPOOL_EXPORT quota_exceeded : public out_of_memory {
 public:
  /**
   * @param what_arg  The diagnosis.
   * @param tenant    The tenant.
   * @param quota     Its quota in bytes.
   * @param live      Its live tensor bytes before the request.
   * @param requested Requested bytes.
   */
  quota_exceeded(std::string what_arg, std::uint32_t tenant, std::size_t quota, std::size_t live,
                 std::size_t requested);
  /// @brief The tenant over quota.
  [[nodiscard]] std::uint32_t tenant() const noexcept { return tenant_; }
  /// @brief Its quota in bytes.
  [[nodiscard]] std::size_t quota() const noexcept { return quota_; }
  /// @brief Its live tensor bytes when the request came.
  [[nodiscard]] std::size_t live() const noexcept { return live_; }

 private:
  std::uint32_t tenant_;
  std::size_t quota_;
  std::size_t live_;
};

namespace detail {
[[noreturn]] TIERPOOL_EXPORT void throw_logic_error(char const* file, int line, std::string_view msg);
[[noreturn]] TIERPOOL_EXPORT void throw_backend_error(char const* file, int line, status s, char const* expr);
}  // namespace detail

}  // namespace tierpool

/// @brief Check a precondition; on failure throw tierpool::logic_error with file and line.
#define TIERPOOL_EXPECTS(cond, msg)                                          \
  do {                                                                       \
    if (!(cond)) [[unlikely]] {                                              \
      ::tierpool::detail::throw_logic_error(__FILE__, __LINE__, (msg));      \
    }                                                                        \
  } while (0)

/// @brief Evaluate an expression returning tierpool::status; throw backend_error unless ok.
#define TIERPOOL_TRY(expr)                                                        \
  do {                                                                            \
    ::tierpool::status const tierpool_try_status_ = (expr);                       \
    if (tierpool_try_status_ != ::tierpool::status::ok) [[unlikely]] {            \
      ::tierpool::detail::throw_backend_error(__FILE__, __LINE__, tierpool_try_status_, #expr); \
    }                                                                             \
  } while (0)

/// @brief Debug-build assertion (on unless NDEBUG).
#ifndef NDEBUG
#define TIERPOOL_ASSERT(cond) TIERPOOL_EXPECTS(cond, "assertion failed: " #cond)
#else
#define TIERPOOL_ASSERT(cond) ((void)0)
#endif
