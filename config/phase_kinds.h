// SPDX-License-Identifier: Apache-2.0
// The heavy phase kinds: the registry.
//
// A kind is one parameter struct in its own header, config/kinds/<kind>.h:
// its name, whether it writes its target, its keys (each a PhaseKey, bound
// to the member that holds it) and their defaults (the member
// initializers). PhaseParams below lists the structs; that list is the
// registry, and its order is the order in which messages and docs name the
// kinds. The config reads, checks and writes a kind's keys from its struct
// alone (config/config.cc), and aging/phases/phase.h declares one RunKind()
// per struct, so a kind without its story does not compile.
//
// Adding a kind: config/kinds/<kind>.h, its place in PhaseParams here, its
// story in aging/phases/<kind>_phase.cc (RunKind and the hooks it overrides,
// declared in aging/phases/phase.h), and its docs (docs/aging.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/kinds/endurance.h"
#include "config/kinds/fill.h"
#include "config/kinds/perf.h"
#include "config/kinds/pgbench.h"
#include "config/kinds/phase_key.h"
#include "config/kinds/power_states.h"
#include "config/kinds/reclaim.h"
#include "config/kinds/replay.h"
#include "config/kinds/retention_verify.h"
#include "config/kinds/retention_write.h"
#include "config/kinds/sqlite.h"
#include "config/kinds/trim.h"

namespace drivewatch::config {

// The registry of kinds.
using PhaseParams = std::variant<FillParams, ReclaimParams, PerfParams, TrimParams,
                                 RetentionWriteParams, RetentionVerifyParams,
                                 PowerStatesParams, EnduranceParams, ReplayParams,
                                 SqliteParams, PgbenchParams>;

// Calls f(P{}) once for each kind's struct P, in registry order.
template <class F>
void ForEachPhaseKind(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::variant_alternative_t<I, PhaseParams>{}), ...);
  }(std::make_index_sequence<std::variant_size_v<PhaseParams>>{});
}

// "fill", "reclaim", ..., in registry order.
std::span<const std::string_view> PhaseKindNames();
// A kind's parameters with their defaults, by its name.
std::optional<PhaseParams> DefaultPhaseParams(std::string_view kind);
std::string_view PhaseKindName(const PhaseParams& params);
// Whether this phase writes its target (all kinds but retention-verify and
// power-states; replay when its trace writes or trims, as far as the config
// knows: ReplayParams::Writes()): it then needs destroy_data on a block
// device, and passes the write gate.
bool PhaseKindWrites(const PhaseParams& params);
// Whether a phase of this kind changes the drive's power settings
// (power-states): it then needs a target that names the drive's serial.
bool PhaseKindChangesPowerState(const PhaseParams& params);
// Whether a phase of this kind runs an application on a directory
// target's file system (sqlite, pgbench): it then needs a directory target.
bool PhaseKindNeedsDirectory(const PhaseParams& params);
// Whether the kind of `params` has the key `name`.
bool PhaseKindHasKey(const PhaseParams& params, std::string_view name);
// Every kind's keys, each once, in registry order.
std::span<const PhaseKey> PhaseKindKeys();

// A key's allowed values in words, from its type and range: "1s to 1h",
// "a multiple of 512B from 512B to 2MiB", "letters, digits, _, - and .".
std::string PhaseKeyRange(const PhaseKey& key);

// A kind key's value as ToToml() writes it ("128KiB", "10s", 0.6,
// ["1m", "2m"]); an unset optional is "" (ToToml leaves the key out).
std::string PhaseValueText(const PhaseKey& key, std::uint64_t value);
std::string PhaseValueText(const PhaseKey& key, std::uint32_t value);
std::string PhaseValueText(const PhaseKey& key, double value);
std::string PhaseValueText(const PhaseKey& key, bool value);
std::string PhaseValueText(const PhaseKey& key, std::chrono::milliseconds value);
std::string PhaseValueText(const PhaseKey& key, const std::vector<std::chrono::milliseconds>& value);
std::string PhaseValueText(const PhaseKey& key, const std::string& value);
// [{ name = "a", ... }, ...]: one inline table per cell, each on its own
// line (a value may span lines in TOML, even inside an inline table).
std::string PhaseValueText(const PhaseKey& key, const std::vector<PerfCell>& value);
template <class T>
std::string PhaseValueText(const PhaseKey& key, const std::optional<T>& value) {
  return value ? PhaseValueText(key, *value) : std::string();
}
std::string PhaseValueText(const PhaseKey& key, const ReplaySpeed& value);

}  // namespace drivewatch::config
