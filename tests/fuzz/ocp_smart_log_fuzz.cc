// SPDX-License-Identifier: Apache-2.0
// DecodeOcpSmartExtended (OCP log C0h) and FindUuidIndex (Identify UUID
// List) on any bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "probes/drive/ocp_smart_log.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace drivewatch;
  const Bytes bytes(data, data + size);
  const auto log = DecodeOcpSmartExtended(bytes);
  const bool guid = size >= kOcpSmartExtendedLogSize &&
                    std::equal(kOcpSmartExtendedGuid.begin(),
                               kOcpSmartExtendedGuid.end(), data + 496);
  const unsigned version =
      size >= kOcpSmartExtendedLogSize ? data[494] | (data[495] << 8) : 0;
  const bool known = version >= kOcpSmartExtendedMinVersion &&
                     version <= kOcpSmartExtendedMaxVersion;
  DW_FUZZ_CHECK(log.ok() == (guid && known),
                "accepts exactly 512+ bytes with the OCP GUID and a known version");
  if (log.ok()) {
    DW_FUZZ_CHECK(log->log_page_version == version, "version as stored");
    DW_FUZZ_CHECK(log->bad_user_nand_blocks_raw < (1ull << 48), "6-byte raw count");
    DW_FUZZ_CHECK(log->refresh_counts < (1ull << 56), "7-byte refresh count");
    (void)log->DssdVersion();
  }
  const auto index = FindUuidIndex(std::span(data, size), kOcpUuid);
  if (index) {
    DW_FUZZ_CHECK(*index >= 1 && *index <= 127, "UUID index in 1..127");
    DW_FUZZ_CHECK(32u + 32u * *index <= size, "entry within the list");
  }
  return 0;
}
