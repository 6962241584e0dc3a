// SPDX-License-Identifier: Apache-2.0
// Storage as a study record keeps it (docs/retention.md, "storage"), and
// extents recorded earlier, perhaps before a reboot, set against extents
// resolved now.
#include "aging/safety/storage.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>

namespace drivewatch::aging {
namespace {

// A recorded storage and one resolved now: see RecordedOverlaps.
bool SameRecorded(const Storage& recorded, const Storage& now) {
  if (recorded.kind != now.kind) return false;
  if (recorded.kind == Storage::Kind::kDisk) {
    if (!recorded.identity.empty() && !now.identity.empty()) {
      return recorded.identity == now.identity;
    }
    return recorded.device == now.device;
  }
  if (recorded.birth_ns != 0 && now.birth_ns != 0 && recorded.birth_ns != now.birth_ns) {
    return false;  // the inode number of a file deleted since, reused
  }
  if (recorded.inode != now.inode) return false;  // another file, whatever path names it
  if (recorded.device == now.device) return true;
  // Device numbers of file systems may change across reboots, inode numbers
  // do not: the path recorded must name this very file now.
  struct stat st;
  return !recorded.path.empty() && ::stat(recorded.path.c_str(), &st) == 0 &&
         S_ISREG(st.st_mode) && st.st_dev == now.device && st.st_ino == now.inode;
}


}  // namespace

Json ToJson(const std::vector<StorageExtent>& extents) {
  Json out = Json::array();
  for (const StorageExtent& e : extents) {
    Json j = Json::object();
    j["kind"] = e.storage.kind == Storage::Kind::kDisk ? "disk" : "file";
    j["device"] = DevNumber(e.storage.device);
    if (e.storage.kind == Storage::Kind::kFile) {
      j["inode"] = static_cast<std::uint64_t>(e.storage.inode);
      j["birth_ns"] = e.storage.birth_ns;
    } else {
      j["identity"] = e.storage.identity;
    }
    j["path"] = e.storage.path;
    j["offset"] = e.offset;
    j["length"] = e.length;
    out.push_back(std::move(j));
  }
  return out;
}

Expected<std::vector<StorageExtent>> StorageFromJson(const Json& j, const std::string& where) {
  const auto bad = [&](const std::string& what) {
    return Error{EBADMSG, -1, where.empty() ? what : where + ": " + what};
  };
  if (!j.is_array() || Items(j).empty() || Items(j).size() > 64) {
    return bad("storage is not a list of 1 to 64 extents");
  }
  std::vector<StorageExtent> out;
  for (std::size_t i = 0; i < Items(j).size(); ++i) {
    const Json& e = Items(j)[i];
    const std::string at = "storage[" + std::to_string(i) + "].";
    const auto text = [&](const char* key) -> const Json* {
      const Json* v = Find(e, key);
      return v != nullptr && v->is_string() ? v : nullptr;
    };
    const auto whole = [&](const char* key) -> std::optional<std::uint64_t> {
      const Json* v = Find(e, key);
      if (v == nullptr || !v->is_number()) return std::nullopt;
      const std::uint64_t u = AsUint(*v, UINT64_MAX);
      if (u == UINT64_MAX || static_cast<double>(u) != AsDouble(*v, -1)) return std::nullopt;
      return u;
    };
    StorageExtent x;
    const Json* kind = text("kind");
    if (kind == nullptr || (AsString(*kind) != "disk" && AsString(*kind) != "file")) {
      return bad(at + "kind is not \"disk\" or \"file\"");
    }
    x.storage.kind = AsString(*kind) == "disk" ? Storage::Kind::kDisk : Storage::Kind::kFile;
    const Json* device = text("device");
    const auto dev = device ? ParseDevNumber(AsString(*device)) : std::nullopt;
    if (!dev) return bad(at + "device is not a \"MAJOR:MINOR\" string");
    x.storage.device = *dev;
    if (x.storage.kind == Storage::Kind::kFile) {
      const auto inode = whole("inode");
      if (!inode) return bad(at + "inode is not a whole number");
      x.storage.inode = static_cast<ino_t>(*inode);
      const auto birth = whole("birth_ns");
      if (!birth) return bad(at + "birth_ns is not a whole number");
      x.storage.birth_ns = *birth;
    } else {
      const Json* identity = text("identity");
      if (identity == nullptr) return bad(at + "identity is not a string");
      x.storage.identity = AsString(*identity);
    }
    const Json* path = text("path");
    if (path == nullptr) return bad(at + "path is not a string");
    x.storage.path = AsString(*path);
    const auto offset = whole("offset");
    const auto length = whole("length");
    if (!offset || !length || *length == 0 || *offset > UINT64_MAX - *length) {
      return bad(at + "offset and length are not a non-empty byte range");
    }
    x.offset = *offset;
    x.length = *length;
    out.push_back(std::move(x));
  }
  return out;
}

bool RecordedOverlaps(const std::vector<StorageExtent>& recorded,
                      const std::vector<StorageExtent>& now) {
  for (const StorageExtent& r : recorded) {
    for (const StorageExtent& n : now) {
      if (SameRecorded(r.storage, n.storage) &&
          RangesOverlap(r.offset, r.length, n.offset, n.length)) {
        return true;
      }
    }
  }
  return false;
}

bool RecordedSame(const std::vector<StorageExtent>& recorded,
                  const std::vector<StorageExtent>& now) {
  if (recorded.size() != now.size()) return false;
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (!SameRecorded(recorded[i].storage, now[i].storage) ||
        recorded[i].offset != now[i].offset || recorded[i].length != now[i].length) {
      return false;
    }
  }
  return true;
}

bool RecordedSharesStorage(const std::vector<StorageExtent>& recorded,
                           const std::vector<StorageExtent>& now) {
  for (const StorageExtent& r : recorded) {
    for (const StorageExtent& n : now) {
      if (SameRecorded(r.storage, n.storage)) return true;
    }
  }
  return false;
}

}  // namespace drivewatch::aging
