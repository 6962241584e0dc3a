// SPDX-License-Identifier: Apache-2.0
#include "config/loader.h"

#include <string>
#include <utility>
#include <vector>

#include "config/checks.h"
#include "config/util/text.h"

namespace drivewatch::config::detail {

void Loader::ReadAging(const toml::table& t, Config& out) {
  ReadAgingTargets(t, out.aging.targets);
  ReadPhases(t, out.aging.phases);
}

namespace {

// Every key this file reads is under [[aging.targets]].
constexpr std::string_view kPath = "aging.targets";

}  // namespace

void Loader::CheckTargetKindKeys(const toml::table& e, bool is_device, bool is_directory) {
  for (std::string_view key :
       {"serial", "namespace", "destroy_data", "allow_signatures"}) {
    const toml::node* n = e.get(key);
    if (n != nullptr && !is_device && is_directory) {
      Report(n->source().begin, std::string(kPath) + "." + std::string(key),
             "only a block_device target has " + std::string(key) +
                 " (expected it on a target with block_device; a "
                 "directory target touches only its own file)");
    }
  }
  for (std::string_view key : {"file_size", "free_space_reserve"}) {
    const toml::node* n = e.get(key);
    if (n != nullptr && is_device) {
      Report(n->source().begin, std::string(kPath) + "." + std::string(key),
             "only a directory target has " + std::string(key) +
                 " (expected it on a target with directory)");
    }
  }
}

void Loader::ReadTargetSerial(const toml::table& e, bool is_device, AgingTarget& target) {
  if (const toml::node* serial = e.get("serial")) {
    const auto* v = serial->as_string();
    if (v == nullptr) {
      WrongType(*serial, std::string(kPath) + ".serial",
                "the drive's serial as a non-empty string");
    } else if (util::Trim(v->get(), kIdentifyPadding).empty()) {
      Report(serial->source().begin, std::string(kPath) + ".serial",
             "empty serial (expected the serial the device must show before drivewatch "
             "writes to it, e.g. serial = \"S4EWNX0R123456\")");
    } else if (util::Trim(v->get(), util::kBlanksAndNul) != v->get()) {
      // Identities are compared byte for byte ("loop:/x/t.img " names
      // another file than "loop:/x/t.img"); a blank at either end is a
      // typo or a copy of padding, never part of what a device shows.
      Report(serial->source().begin, std::string(kPath) + ".serial",
             Quote(v->get()) + " has blanks at its start or end (expected the serial "
             "exactly as the device shows it, without padding: drivewatch compares "
             "serials byte for byte)");
    } else {
      target.serial = v->get();
    }
  } else if (is_device) {
    Report(e.source().begin, std::string(kPath) + ".serial",
           "missing serial (expected the serial the device must show "
           "before drivewatch writes to it, e.g. serial = "
           "\"S4EWNX0R123456\")");
  }
}

void Loader::ReadAgingTargets(const toml::table& t, std::vector<AgingTarget>& out) {
  std::vector<Located> names;
  auto read_one = [&](const toml::table& e, AgingTarget& target, std::size_t) {
    target.name = ReadName(e, kPath, "target", names);
    const auto [device, directory] =
        ReadDeviceOrDirectory(e, kPath, target.block_device, target.directory,
                              detail::BlockDeviceProblem);
    // Keys that belong to one kind of target only.
    CheckTargetKindKeys(e, device != nullptr, directory != nullptr);
    ReadTargetSerial(e, device != nullptr, target);
    ReadInteger(e, "namespace", kPath, 1, 0xFFFFFFFE, target.nsid);
    if (device != nullptr && e.get("namespace") == nullptr && !target.block_device.empty() &&
        detail::NvmeNamespacePath(target.block_device)) {
      Report(e.source().begin, std::string(kPath) + ".namespace",
             "missing namespace (expected the namespace ID the device must show before "
             "drivewatch writes to it, since " + Quote(target.block_device) +
                 " is an NVMe namespace, e.g. namespace = 1)");
    }
    ReadBool(e, "destroy_data", kPath, target.destroy_data);
    ReadBool(e, "allow_signatures", kPath, target.allow_signatures);
    if (const toml::node* fs = e.get("file_size")) {
      if (auto size = Size(*fs, std::string(kPath) + ".file_size")) {
        if (*size < (1u << 20) || *size % (1u << 20) != 0) {
          Report(fs->source().begin, std::string(kPath) + ".file_size",
                 Quote(FormatSize(*size)) + " is not a usable file size "
                 "(expected a whole number of MiB, at least 1MiB)");
        } else {
          target.file_size = *size;
        }
      }
    }
    ReadNumber(e, "free_space_reserve", kPath, 0, 0.9,
               "a fraction of the file system from 0 to 0.9",
               target.min_free_ratio);
    if (!target.name.empty()) {
      read_targets_.push_back(ReadTarget{target, e.source().begin});
    }
  };
  ReadTables(t, "targets", "aging", KeyNames(Section(kPath)),
             "a table with name and block_device or directory", out, read_one);
}

const Loader::ReadTarget* Loader::FindReadTarget(std::string_view name) const {
  for (const ReadTarget& t : read_targets_) {
    if (t.target.name == name) return &t;
  }
  return nullptr;
}

bool Loader::SameStorage(const AgingTarget& a, const AgingTarget& b) {
  return a.name == b.name || (!a.block_device.empty() && a.block_device == b.block_device) ||
         (!a.serial.empty() && a.serial == b.serial && a.nsid == b.nsid);
}

}  // namespace drivewatch::config::detail
