// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: gradsum::decode_checkpoint on arbitrary bytes. Only
// gradsum::Error may leave it, its message must name the file, and a
// checkpoint it accepts must encode back to the very same bytes.
//
// Random bytes almost never carry a valid length and CRC-32, which would
// stop every input at the checksum: each input is decoded as it is and
// again with its length field and checksum made to fit, so the fuzzer
// reaches the records behind them.

#include <gradsum/train/checkpoint_format.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void decode(const std::string& bytes) {
  gradsum::CheckpointData c;
  try {
    c = gradsum::decode_checkpoint("fuzz.ckpt", bytes);
  } catch (const gradsum::Error& e) {
    if (std::string(e.what()).find("'fuzz.ckpt'") == std::string::npos) {
      std::fprintf(stderr, "fuzz_checkpoint: message does not name the file: %s\n", e.what());
      std::abort();
    }
    return;
  }
  if (c.parameters().size() != std::size_t(c.num_parameters) ||
      gradsum::encode_checkpoint(c) != bytes) {
    std::fprintf(stderr, "fuzz_checkpoint: an accepted checkpoint does not round-trip\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  decode(bytes);
  if (size >= 28) {
    const std::uint64_t length = size;
    std::memcpy(&bytes[16], &length, sizeof length);
    const std::uint32_t crc =
        gradsum::detail::crc32(reinterpret_cast<const unsigned char*>(bytes.data()), size - 4);
    std::memcpy(&bytes[size - 4], &crc, sizeof crc);
    decode(bytes);
  }
  return 0;
}
