// SPDX-License-Identifier: Apache-2.0
// The real drive layer: discovery through libnvme's sysfs scan and admin
// commands through the kernel's passthrough ioctls on /dev/nvmeN.
//
// Needs CAP_SYS_ADMIN on Linux 6.1 for every admin command, Identify
// included, and also for discovery to see namespaces: libnvme 1.3 opens each
// namespace block device and sends it an Identify while scanning, and drops
// the namespace silently when that fails.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "probes/drive_layer.h"

namespace drivewatch {

// Timeout of every admin command drivewatch sends. Health, Identify and
// feature reads complete in microseconds to milliseconds; 5 s only bounds a
// hung controller, after which the kernel's own recovery takes over.
inline constexpr std::uint32_t kAdminCommandTimeoutMs = 5000;

// Scan() rescans sysfs on every call, so hot-plugged and removed controllers
// show up at the next scan; with no NVMe driver loaded or no controller
// present it returns an empty list. Every namespace appears once, under the
// first controller (in kernel name order) with a path to it.
std::unique_ptr<DriveLayer> MakeNvmeDriveLayer();

// A Controller that sends its admin commands through `fd`, which the
// caller opened and keeps (it is not closed here): a heavy phase holds its
// namespace's block device open already, and the kernel accepts admin
// passthrough on a namespace's block device as on the controller's
// character device. Errors name `device`, or if it is empty the file `fd`
// refers to.
std::unique_ptr<Controller> NvmeControllerOn(int fd, std::string device = "");

namespace detail {

// Turns a libnvme ioctl return code into an Error naming `device` and the
// command: rc > 0 is the NVMe status as the kernel returns it (SCT/SC plus
// the More and DNR bits), e.g. "/dev/nvme0: get log page 02h: Invalid Field
// in Command (0x4002)"; rc < 0 means `saved_errno`, read right after the
// call. Exposed for tests.
Error AdminCommandError(const std::string& device, const std::string& what,
                        int rc, int saved_errno);

}  // namespace detail

}  // namespace drivewatch
