// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets share: a check that stops the run with a message
// when a property the code promises does not hold. libFuzzer treats the
// abort like a crash and saves the input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define DW_FUZZ_CHECK(cond, what)                                      \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #cond, \
                   what);                                              \
      std::abort();                                                    \
    }                                                                  \
  } while (0)
