// SPDX-License-Identifier: Apache-2.0
#include "probes/drive/namespace_identity.h"

#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

#include "config/util/sys.h"

namespace drivewatch {
namespace {

using util::ReadAttribute;

}  // namespace

Expected<NamespaceIdentity> ReadNamespaceIdentity(const std::string& sysfs_root,
                                                  dev_t device) {
  const std::string dir = sysfs_root + "/dev/block/" +
                          std::to_string(major(device)) + ":" +
                          std::to_string(minor(device));
  auto serial = ReadAttribute(dir + "/device/serial");
  if (!serial) return serial.error();
  auto nsid_text = ReadAttribute(dir + "/nsid");
  if (!nsid_text) return nsid_text.error();
  NamespaceIdentity id;
  id.serial = std::move(*serial);
  char* end = nullptr;
  errno = 0;
  const unsigned long nsid = std::strtoul(nsid_text->c_str(), &end, 10);
  if (nsid_text->empty() || *end != '\0' || errno != 0 || nsid == 0 ||
      nsid > 0xffffffffUL) {
    return Error{EINVAL, -1,
                 dir + "/nsid: \"" + *nsid_text + "\" is not a namespace ID"};
  }
  id.nsid = static_cast<std::uint32_t>(nsid);
  return id;
}

Status CheckNamespaceIdentity(const std::string& sysfs_root, dev_t device,
                              const std::string& serial, std::uint32_t nsid) {
  auto id = ReadNamespaceIdentity(sysfs_root, device);
  if (!id) return id.error();
  if (id->serial != serial || id->nsid != nsid) {
    return Error{EXDEV, -1,
                 "block device " + std::to_string(major(device)) + ":" +
                     std::to_string(minor(device)) + " is namespace " +
                     std::to_string(id->nsid) + " of serial \"" + id->serial +
                     "\", expected namespace " + std::to_string(nsid) +
                     " of serial \"" + serial + "\""};
  }
  return Ok{};
}

}  // namespace drivewatch
