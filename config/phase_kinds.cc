// SPDX-License-Identifier: Apache-2.0
#include "config/phase_kinds.h"

#include <algorithm>
#include <array>

namespace drivewatch::config {
namespace {

constexpr std::size_t kKinds = std::variant_size_v<PhaseParams>;

std::array<std::string_view, kKinds> MakeKindNames() {
  std::array<std::string_view, kKinds> names;
  std::size_t i = 0;
  ForEachPhaseKind([&](auto kind) { names[i++] = decltype(kind)::kName; });
  return names;
}

std::vector<PhaseKey> MakeKindKeys() {
  std::vector<PhaseKey> keys;
  ForEachPhaseKind([&](auto kind) {
    decltype(kind)::Keys(kind, [&](const PhaseKey& key, const auto&) {
      const bool known = std::any_of(keys.begin(), keys.end(),
                                     [&](const PhaseKey& k) { return k.name == key.name; });
      if (!known) keys.push_back(key);
    });
  });
  return keys;
}

}  // namespace

std::span<const std::string_view> PhaseKindNames() {
  static const std::array<std::string_view, kKinds> names = MakeKindNames();
  return names;
}

std::span<const PhaseKey> PhaseKindKeys() {
  static const std::vector<PhaseKey> keys = MakeKindKeys();
  return keys;
}

std::vector<PerfCell> DefaultPerfCells(const PerfParams& p, std::uint32_t logical_block) {
  const std::uint32_t qd = p.queue_depth;
  const std::uint32_t small = std::max<std::uint32_t>(512, logical_block);
  const double mixed = p.perf_mixed_iops;
  return {
      {.name = "seq_read", .access = "sequential", .operation = "read",
       .block_size = 128 * 1024, .queue_depth = qd},
      {.name = "seq_write", .access = "sequential", .operation = "write",
       .block_size = 128 * 1024, .queue_depth = qd},
      {.name = "rand_read_4k", .access = "random", .operation = "read", .block_size = 4096,
       .queue_depth = qd},
      {.name = "rand_write_4k", .access = "random", .operation = "write", .block_size = 4096,
       .queue_depth = qd},
      {.name = "qd1_rand_read", .access = "random", .operation = "read", .block_size = small},
      {.name = "qd1_rand_write", .access = "random", .operation = "write", .block_size = small},
      {.name = "mixed_90_10", .access = "random", .operation = "mix", .read_percent = 90,
       .block_size = 4096, .queue_depth = qd, .rate_iops = mixed},
      {.name = "mixed_50_50", .access = "random", .operation = "mix", .read_percent = 50,
       .block_size = 4096, .queue_depth = qd, .rate_iops = mixed},
  };
}

std::span<const PerfCell> PresetCells(std::string_view preset) {
  // Phoronix's storage runs (fio with io_uring and direct I/O): 4 KiB
  // random read and write at QD1 and QD32, 2 MiB sequential read at QD1,
  // QD8 and QD32, 2 MiB sequential write at QD8. Durations are the
  // phase's perf_duration.
  constexpr std::uint32_t k4k = 4096, k2m = 2u << 20;
  static const std::vector<PerfCell> phoronix = {
      {.name = "rand_read_4k_qd1", .access = "random", .operation = "read", .block_size = k4k,
       .queue_depth = 1},
      {.name = "rand_read_4k_qd32", .access = "random", .operation = "read", .block_size = k4k,
       .queue_depth = 32},
      {.name = "rand_write_4k_qd1", .access = "random", .operation = "write", .block_size = k4k,
       .queue_depth = 1},
      {.name = "rand_write_4k_qd32", .access = "random", .operation = "write", .block_size = k4k,
       .queue_depth = 32},
      {.name = "seq_read_2m_qd1", .access = "sequential", .operation = "read", .block_size = k2m,
       .queue_depth = 1},
      {.name = "seq_read_2m_qd8", .access = "sequential", .operation = "read", .block_size = k2m,
       .queue_depth = 8},
      {.name = "seq_read_2m_qd32", .access = "sequential", .operation = "read", .block_size = k2m,
       .queue_depth = 32},
      {.name = "seq_write_2m_qd8", .access = "sequential", .operation = "write",
       .block_size = k2m, .queue_depth = 8},
  };
  static const std::vector<PerfCell> built_in = DefaultPerfCells(PerfParams{}, 512);
  if (preset == "phoronix") return phoronix;
  if (preset == "builtin") return built_in;
  return {};
}

std::optional<PhaseParams> DefaultPhaseParams(std::string_view kind) {
  std::optional<PhaseParams> out;
  ForEachPhaseKind([&](auto params) {
    if (decltype(params)::kName == kind) out = params;
  });
  return out;
}

std::string_view PhaseKindName(const PhaseParams& params) {
  return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::kName; }, params);
}

bool PhaseKindWrites(const PhaseParams& params) {
  return std::visit(
      [](const auto& p) {
        if constexpr (requires { p.Writes(); }) {
          return p.Writes();
        } else {
          return std::decay_t<decltype(p)>::kWrites;
        }
      },
      params);
}

bool PhaseKindChangesPowerState(const PhaseParams& params) {
  return std::visit(
      [](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (requires { P::kChangesPowerState; }) {
          return P::kChangesPowerState;
        } else {
          return false;
        }
      },
      params);
}

bool PhaseKindNeedsDirectory(const PhaseParams& params) {
  return std::visit(
      [](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (requires { P::kNeedsDirectory; }) {
          return P::kNeedsDirectory;
        } else {
          return false;
        }
      },
      params);
}

bool PhaseKindHasKey(const PhaseParams& params, std::string_view name) {
  return std::visit(
      [&](const auto& p) {
        bool has = false;
        std::decay_t<decltype(p)>::Keys(
            p, [&](const PhaseKey& key, const auto&) { has = has || key.name == name; });
        return has;
      },
      params);
}

}  // namespace drivewatch::config
