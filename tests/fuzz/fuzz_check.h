// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets share: a check that stops the run with a message
// when a property the code promises does not hold. libFuzzer treats the
// abort like a crash and saves the input.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#define DW_FUZZ_CHECK(cond, what)                                      \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #cond, \
                   what);                                              \
      std::abort();                                                    \
    }                                                                  \
  } while (0)

// A path to a file that holds exactly `data` (one memfd per process,
// rewritten each time), for code that reads files: no disk is touched.
inline std::string DwFuzzFile(const std::uint8_t* data, std::size_t size) {
  static const int fd = memfd_create("drivewatch-fuzz", 0);
  DW_FUZZ_CHECK(fd >= 0, "memfd_create failed");
  DW_FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate failed");
  DW_FUZZ_CHECK(pwrite(fd, data, size, 0) == static_cast<ssize_t>(size), "pwrite failed");
  return "/proc/self/fd/" + std::to_string(fd);
}
