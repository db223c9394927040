// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: gradsum::decode_safetensors on arbitrary bytes. Only
// gradsum::Error may leave it, its message must name the file, and a file
// it accepts must have every F32 and F64 value readable and encode to bytes
// that decode to the same entries, metadata and data (gradsum's writer is
// canonical: encoding those again gives the very same bytes).
//
// Random bytes almost never carry a header length that fits: each input is
// decoded as it is and again with its length field set to end the header
// at its last '}', so the fuzzer reaches the JSON behind it.

#include <gradsum/core/safetensors.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void stop(const char* why) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", why);
  std::abort();
}

bool same(const gradsum::Safetensors& a, const gradsum::Safetensors& b) {
  if (a.metadata != b.metadata || a.data != b.data || a.tensors.size() != b.tensors.size())
    return false;
  for (std::size_t k = 0; k < a.tensors.size(); ++k) {
    const auto &s = a.tensors[k], &t = b.tensors[k];
    if (s.name != t.name || s.dtype != t.dtype || s.shape != t.shape || s.begin != t.begin ||
        s.end != t.end)
      return false;
  }
  return true;
}

void decode(const std::string& bytes) {
  gradsum::Safetensors s;
  try {
    s = gradsum::decode_safetensors("fuzz.safetensors", bytes);
  } catch (const gradsum::Error& e) {
    if (std::string(e.what()).find("'fuzz.safetensors'") == std::string::npos) {
      std::fprintf(stderr, "message: %s\n", e.what());
      stop("a message does not name the file");
    }
    return;
  }
  double sum = 0;
  for (const gradsum::SafetensorsTensor& t : s.tensors) {
    if (t.dtype != "F32" && t.dtype != "F64") continue;
    const std::size_t size = t.dtype == "F64" ? 8 : 4;
    for (std::size_t j = 0; j < (t.end - t.begin) / size; ++j) sum += s.value(t, j);
  }
  const std::string encoded = gradsum::encode_safetensors(s);
  gradsum::Safetensors back;
  try {
    back = gradsum::decode_safetensors("fuzz.safetensors", encoded);
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "message: %s\n", e.what());
    stop("gradsum's encoding of an accepted file is refused");
  }
  if (!same(s, back) || gradsum::encode_safetensors(back) != encoded)
    stop("an accepted file does not round-trip");
  volatile double sink = sum;  // keeps the reads
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  decode(bytes);
  const std::size_t close = bytes.size() > 8 ? bytes.rfind('}') : std::string::npos;
  if (close != std::string::npos && close >= 8) {
    const std::uint64_t n = close + 1 - 8;
    for (int k = 0; k < 8; ++k) bytes[std::size_t(k)] = char((n >> (8 * k)) & 0xff);
    decode(bytes);
  }
  return 0;
}
