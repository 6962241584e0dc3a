// SPDX-License-Identifier: Apache-2.0
// Is an open block device still the namespace we mean? Kernel names are not
// identities: after a hot-plug or a reboot /dev/nvme1n1 can be another
// drive's namespace. Before the read latency probe reads a namespace it
// asks sysfs about the device it actually opened (by device number, so
// there is no window between looking up a name and opening it):
//
//   <sysfs>/dev/block/<major>:<minor>/device/serial   the controller's SN
//                                                      (or, for a multipath
//                                                      head, its subsystem's)
//   <sysfs>/dev/block/<major>:<minor>/nsid            the namespace ID
//
// The sysfs root is a parameter so that tests can point it at a fixture
// tree.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "config/util/expected.h"

namespace drivewatch {

struct NamespaceIdentity {
  std::string serial;  // trimmed
  std::uint32_t nsid = 0;
};

// Reads the identity of block device `device` (st_rdev) from sysfs. Fails
// with the errno of the missing attribute, or EINVAL for an unreadable nsid.
Expected<NamespaceIdentity> ReadNamespaceIdentity(const std::string& sysfs_root,
                                                  dev_t device);

// Succeeds when `device` is namespace `nsid` of the controller with serial
// `serial`; otherwise fails with EXDEV and a message naming both identities.
Status CheckNamespaceIdentity(const std::string& sysfs_root, dev_t device,
                              const std::string& serial, std::uint32_t nsid);

}  // namespace drivewatch
