// SPDX-License-Identifier: Apache-2.0
// Where the kernel signals the completions of a target's reads: the CPUs
// that take the interrupts of the device under it.
//
// A thread waiting for a read sleeps on its CPU; the device's interrupt
// wakes it from the CPU that takes that interrupt. When the two differ, the
// wake-up crosses CPUs (an inter-processor interrupt, and on a virtual
// machine an exit of the sleeping vCPU), which adds tens of microseconds to
// a read that takes a hundred. An NVMe controller has a queue and an
// interrupt per CPU (or per group of CPUs), so its completions come back to
// the CPU that submitted and nothing needs doing; a device with one queue
// (virtio-blk, a controller that offers fewer queues than there are CPUs)
// signals every completion on one CPU. The read reactor runs on the CPUs
// this returns (probes/latency/read_reactor.h).
//
// Found through sysfs, from the open file or block device down to the
// interrupt vectors of the PCI function under it:
//   a file        its file system's block device (st_dev);
//   a partition   its disk;
//   a loop device its backing file (or device), again;
//   dm / md       each of its slaves, again;
//   a disk        device/ up to the first directory with msi_irqs/, whose
//                 vectors' /proc/irq/N/effective_affinity_list are joined.
// Anything else (no sysfs entry, no MSI vectors: zram, a RAM disk, a tmpfs
// file) is unknown: an empty list, and the reactor then stays where the
// scheduler puts it.
#pragma once

#include <string>
#include <vector>

namespace drivewatch {

struct CompletionCpus {
  std::vector<int> cpus;  // sorted, distinct; empty: unknown
  std::string via;        // for the log: "/dev/vda (irq 35, 36)"
};

// For an open file or block device. `sysfs_root` and `procfs_root` are
// where it looks (tests point them at fixture trees).
CompletionCpus FindCompletionCpus(int fd, const std::string& sysfs_root = "/sys",
                                  const std::string& procfs_root = "/proc");

// Where a reactor reading `targets` runs, of the CPUs it may use
// (`allowed`, sorted): on their completion CPUs that it may use, when every
// target's are known and any of them is allowed; otherwise on all of
// `allowed` (one target whose completions may come anywhere: any CPU will
// do). `why` says so for the log: "CPU 1, where the kernel signals its
// reads' completions: /dev/vda (irq 35, 36)".
struct ReactorPlace {
  std::vector<int> cpus;
  std::string why;
};
ReactorPlace PlaceReactor(const std::vector<const CompletionCpus*>& targets,
                          const std::vector<int>& allowed);

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; nullopt-like empty for bad text.
std::vector<int> ParseCpuList(const std::string& text);

}  // namespace drivewatch
