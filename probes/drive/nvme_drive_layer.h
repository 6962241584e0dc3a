// SPDX-License-Identifier: Apache-2.0
// The real drive layer: discovery from sysfs (/sys/class/nvme, as libnvme
// reads it too) and admin commands through libnvme's passthrough ioctls on
// /dev/nvmeN.
//
// Discovery sends no command: libnvme 1.3's nvme_scan_topology opens every
// namespace and sends it an Identify Namespace (nvme_ns_init), which made
// most of a one-shot run's time, and dropped the namespace silently without
// CAP_SYS_ADMIN. Admin commands need CAP_SYS_ADMIN on Linux 6.1, Identify
// included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "probes/drive/drive_layer.h"

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

// The namespace ID of the namespace block device open as `fd` (the kernel's
// NVME_IOCTL_ID). Fails with the ioctl's errno, e.g. ENOTTY for a block
// device that is not an NVMe namespace.
Expected<std::uint32_t> NamespaceIdOn(int fd);

namespace detail {

// Turns a libnvme ioctl return code into an Error naming `device` and the
// command: rc > 0 is the NVMe status as the kernel returns it (SCT/SC plus
// the More and DNR bits), e.g. "/dev/nvme0: get log page 02h: Invalid Field
// in Command (0x4002)"; rc < 0 means `saved_errno`, read right after the
// call. Exposed for tests.
Error AdminCommandError(const std::string& device, const std::string& what,
                        int rc, int saved_errno);

// Scan() on the sysfs tree at `sysfs` ("/sys" in the daemon; tests build a
// tree of their own): every /class/nvme/nvmeN with a serial, in instance
// order, with its namespaces (nsid from /block/NAME/nsid).
Expected<std::vector<ControllerInfo>> ScanSysfs(const std::string& sysfs);

}  // namespace detail

}  // namespace drivewatch
