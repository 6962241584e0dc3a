// SPDX-License-Identifier: Apache-2.0
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, as iSCSI and ext4
// use it): the checksum of history records and of the data pattern's
// chunks. SSE4.2's crc32 instruction when the CPU has it (about 8 bytes a
// cycle), slicing-by-8 tables otherwise. `crc` is a previous result to
// continue from (0 to start): Crc32c(b, n, Crc32c(a, m)) is the CRC of a
// followed by b. Crc32c("123456789", 9) == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>

namespace drivewatch::aging {

std::uint32_t Crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

namespace detail {
// The table path alone, so tests hold both paths to the same answers.
std::uint32_t Crc32cPortable(const void* data, std::size_t size, std::uint32_t crc = 0);
}  // namespace detail

}  // namespace drivewatch::aging
