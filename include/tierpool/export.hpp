// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file export.hpp
 * @brief Symbol visibility macros. The library builds with hidden visibility; public
 *        entities are marked TIERPOOL_EXPORT.
 */
#pragma once

#if defined(_WIN32)
#define TIERPOOL_EXPORT
#define TIERPOOL_HIDDEN
#else
/// @brief Marks a public entity: visible outside the shared library.
#define TIERPOOL_EXPORT __attribute__((visibility("default")))
/// @brief Marks an entity that stays inside the library even when its header is public.
#define TIERPOOL_HIDDEN __attribute__((visibility("hidden")))
#endif
