// SPDX-License-Identifier: Apache-2.0
#include "config/loader.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "config/checks.h"

namespace drivewatch::config::detail {

namespace {

constexpr Range kWindowRange{milliseconds{60'000}, std::chrono::hours{24}};
constexpr std::uint32_t kMaxRate = 10'000;

}  // namespace

void Loader::ReadReadLatency(const toml::table& table, Config& config) {
  const toml::table* t = &table;
  ReadLatencySettings& out = config.read_latency;
  ReadRates(*t, out.rates);
  if (const toml::node* node = t->get("arrivals")) {
    const auto* v = node->as_string();
    if (v == nullptr) {
      WrongType(*node, "probes.read_latency.arrivals",
                "a string: \"fixed\" or \"poisson\"");
    } else if (v->get() == "fixed" || v->get() == "poisson") {
      out.arrivals = v->get() == "fixed" ? Arrivals::kFixed : Arrivals::kPoisson;
    } else {
      Report(node->source().begin, "probes.read_latency.arrivals",
             Quote(v->get()) + " is not an arrival process (expected "
             "\"fixed\" or \"poisson\")");
    }
  }
  if (const toml::node* node = t->get("block_size")) {
    if (auto size = Size(*node, "probes.read_latency.block_size")) {
      if (*size < 512 || *size > (1u << 20) || (*size & (*size - 1)) != 0) {
        Report(node->source().begin, "probes.read_latency.block_size",
               Quote(FormatSize(*size)) + " is not a usable block size "
               "(expected a power of two from 512B to 1MiB)");
      } else {
        out.block_size = static_cast<std::uint32_t>(*size);
      }
    }
  }
  ReadWindows(*t, out.windows);
  ReadReadTargets(*t, out.block_size, out.targets);
}

void Loader::ReadRates(const toml::table& t, std::vector<std::uint32_t>& out) {
  const std::string key = "probes.read_latency.rates";
  const toml::node* node = t.get("rates");
  if (node == nullptr) return;
  const toml::array* array = node->as_array();
  constexpr std::string_view kExpected =
      "a non-empty array of whole IOPS from 1 to 10000, such as [10, 100]";
  if (array == nullptr) return WrongType(*node, key, kExpected);
  if (array->empty()) return BadCount(*node, key, kExpected);
  std::vector<std::uint32_t> rates;
  for (const toml::node& element : *array) {
    const auto* v = element.as_integer();
    if (v == nullptr) return WrongType(element, key, kExpected);
    if (v->get() < 1 || v->get() > kMaxRate) {
      return Report(element.source().begin, key,
                    std::to_string(v->get()) +
                        " IOPS is out of range (expected 1 to 10000)");
    }
    const auto rate = static_cast<std::uint32_t>(v->get());
    if (std::find(rates.begin(), rates.end(), rate) != rates.end()) {
      return Report(element.source().begin, key,
                    std::to_string(rate) +
                        " is listed twice (expected each rate once)");
    }
    rates.push_back(rate);
  }
  out = std::move(rates);
}

void Loader::ReadWindows(const toml::table& t, std::vector<milliseconds>& out) {
  const std::string key = "probes.read_latency.windows";
  const toml::node* node = t.get("windows");
  if (node == nullptr) return;
  const toml::array* array = node->as_array();
  constexpr std::string_view kExpected =
      "an array of 1 to 4 durations from 1m to 1d, such as [\"15m\", \"1h\"]";
  if (array == nullptr) return WrongType(*node, key, kExpected);
  if (array->empty() || array->size() > 4) return BadCount(*node, key, kExpected);
  std::vector<milliseconds> windows;
  for (const toml::node& element : *array) {
    const auto* v = element.as_string();
    if (v == nullptr) return WrongType(element, key, kExpected);
    std::string problem;
    const auto d = ParseDuration(v->get(), &problem);
    if (!d) return Report(element.source().begin, key, std::move(problem));
    if (*d < kWindowRange.min || *d > kWindowRange.max) {
      return Report(element.source().begin, key,
                    Quote(v->get()) + " is out of range (expected 1m to 1d)");
    }
    if (std::find(windows.begin(), windows.end(), *d) != windows.end()) {
      return Report(element.source().begin, key,
                    Quote(v->get()) + " is listed twice (expected each "
                    "window once)");
    }
    windows.push_back(*d);
  }
  out = std::move(windows);
}

void Loader::ReadReadTargets(const toml::table& t, std::uint32_t block_size,
                             std::vector<ReadLatencyTarget>& out) {
  constexpr std::string_view kPath = "probes.read_latency.targets";
  std::vector<Located> names;
  auto read_one = [&](const toml::table& e, ReadLatencyTarget& target, std::size_t) {
    target.name = ReadName(e, kPath, "target", names);
    const auto [device, directory] =
        ReadDeviceOrDirectory(e, kPath, target.block_device, target.directory);
    if (const toml::node* fs = e.get("file_size")) {
      if (device != nullptr) {
        Report(fs->source().begin, std::string(kPath) + ".file_size",
               "only a directory target has a test file (expected no "
               "file_size with block_device)");
      } else if (auto size = Size(*fs, std::string(kPath) + ".file_size")) {
        if (*size < (1u << 20) || *size % block_size != 0) {
          Report(fs->source().begin, std::string(kPath) + ".file_size",
                 Quote(FormatSize(*size)) + " is not a usable test file "
                 "size (expected at least 1MiB, a multiple of block_size)");
        } else {
          target.file_size = *size;
        }
      }
    }
    ReadRegion(e, kPath, block_size,
               " is not a multiple of block_size " + Quote(FormatSize(block_size)),
               target.offset, target.length);
  };
  ReadTables(t, "targets", "probes.read_latency", KeyNames(Section(kPath)),
             "a table with name and block_device or directory", out, read_one);
}

}  // namespace drivewatch::config::detail
