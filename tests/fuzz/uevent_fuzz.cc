// SPDX-License-Identifier: Apache-2.0
// ParseUevent and NvmeAsyncEventFromUevent on any datagram, as the AEN
// listener receives them from the kernel's netlink socket.
#include <cstddef>
#include <cstdint>
#include <span>

#include "exporter/async_events.h"
#include "probes/drive/features.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto uevent =
      drivewatch::ParseUevent(std::span(reinterpret_cast<const char*>(data), size));
  if (!uevent) return 0;
  if (const auto event = drivewatch::NvmeAsyncEventFromUevent(*uevent)) {
    DW_FUZZ_CHECK(!event->kernel_name.empty(), "an AEN without a controller");
    const auto decoded = drivewatch::DecodeAsyncEvent(event->result);
    (void)decoded.TypeName();
    (void)decoded.InfoName();
  }
  return 0;
}
