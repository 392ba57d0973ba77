// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file tierpool.hpp
 * @brief Umbrella header: everything a program that links tierpool::tierpool uses.
 *        Includes no CUDA header.
 */
#pragma once

#include <tierpool/config.hpp>
#include <tierpool/version.hpp>
#include <tierpool/export.hpp>
#include <tierpool/types.hpp>
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/backend.hpp>
#include <tierpool/arena.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/topology.hpp>
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/backends/cuda_backend.hpp>
#include <tierpool/backend_factory.hpp>
#include <tierpool/telemetry.hpp>
#include <tierpool/pool_options.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/snapshot.hpp>
#include <tierpool/event.hpp>
#include <tierpool/monitor.hpp>
