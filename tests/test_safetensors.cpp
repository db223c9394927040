// SPDX-License-Identifier: Apache-2.0
// The safetensors format on its own (core/safetensors.hpp): the bytes the
// writer makes are the format's (checked against bytes written out by
// hand), and every malformed or hostile file - short, a header length
// past the end or beyond the limit, broken JSON, an unknown dtype,
// offsets out of range, overlapping or leaving a gap, sizes that do not
// match the shape or exceed the file - is refused with a message naming
// the file, the tensor or header byte, and the value seen.

#include "file_helpers.hpp"

#include <gradsum/core/safetensors.hpp>

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>

using namespace gradsum_test;

namespace {

// A file of `header` (padded by nothing) and `data`, with its length.
std::string file_of(const std::string& header, const std::string& data = "") {
  std::string bytes(8, '\0');
  for (int k = 0; k < 8; ++k) bytes[std::size_t(k)] = char((header.size() >> (8 * k)) & 0xff);
  return bytes + header + data;
}

// What decoding `bytes` throws, or "accepted".
std::string decode_error(const std::string& bytes) {
  try {
    gradsum::decode_safetensors("t.safetensors", bytes);
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "accepted";
}

// One F32 tensor "a" of `shape` at `offsets`, over `data`.
std::string one_tensor(const std::string& shape, const std::string& offsets,
                       const std::string& data, const std::string& dtype = "F32") {
  return file_of("{\"a\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
                     ",\"data_offsets\":" + offsets + "}}",
                 data);
}

void check_refused(const std::string& bytes, const std::vector<std::string>& parts) {
  const std::string message = decode_error(bytes);
  INFO(message);
  CHECK(message.find("gradsum::read_safetensors: 't.safetensors'") == 0);
  for (const std::string& part : parts) CHECK(message.find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("safetensors: the writer's bytes are the format's, and read back the same") {
  gradsum::Safetensors s;
  s.metadata = {{"k", "v\"1"}};
  s.append("a", {2}, {1.0, -2.0}, 4);
  s.append("b", {1, 1}, {0.5}, 8);
  // Written out by hand: 1.0f is 0x3f800000, -2.0f 0xc0000000, 0.5 is
  // 0x3fe0000000000000, all little-endian; the header padded to 8 bytes.
  std::string header = "{\"__metadata__\":{\"k\":\"v\\\"1\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F64\",\"shape\":[1,1],\"data_offsets\":[8,16]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\xe0\x3f", 16);
  const std::string bytes = gradsum::encode_safetensors(s);
  CHECK(bytes == file_of(header, data));
  CHECK((bytes.size() - 8 - data.size()) % 8 == 0);

  const gradsum::Safetensors back = gradsum::decode_safetensors("t.safetensors", bytes);
  REQUIRE(back.tensors.size() == 2);
  CHECK(*back.metadata_value("k") == "v\"1");
  CHECK(back.value(back.tensors[0], 1) == -2.0);
  CHECK(back.value(back.tensors[1], 0) == 0.5);
  CHECK(gradsum::encode_safetensors(back) == bytes);
}

TEST_CASE("safetensors: JSON as other writers format it is read") {
  // Spaces and newlines, escapes, \u with a surrogate pair, an empty shape.
  const std::string header =
      "{ \"__metadata__\" : { \"n\\u00e9\" : \"\\ud83d\\ude00\\n\" } ,\n"
      "  \"s\" : { \"shape\" : [ ] , \"data_offsets\" : [ 0 , 8 ] , \"dtype\" : \"F64\" } }   ";
  const std::string bytes = file_of(header, std::string(8, '\0'));
  const auto s = gradsum::decode_safetensors("t.safetensors", bytes);
  CHECK(*s.metadata_value("n\xc3\xa9") == "\xf0\x9f\x98\x80\n");
  CHECK(s.find("s")->shape.empty());
  CHECK(s.value(*s.find("s"), 0) == 0.0);
}

TEST_CASE("safetensors: short files and header lengths past the end or the limit are refused") {
  check_refused("", {"0 bytes long, shorter than the 8-byte header length"});
  check_refused("abc", {"3 bytes long"});
  std::string past = file_of("{}");
  past[0] = 3;  // a header of 3 bytes, 2 follow
  check_refused(past, {"declares a header of 3 bytes, but only 2 bytes follow"});
  std::string huge = file_of("{}");
  huge[7] = char(0x80);  // 2^63 + 2
  check_refused(huge, {"declares a header of 9223372036854775810 bytes, but only 2"});
  check_refused(file_of("{"), {"declares a header of 1 bytes"});
}

TEST_CASE("safetensors: a header length over the limit is refused before it is read") {
  // A sparse file of 150 MB whose length field says 120 MB: refused for
  // the limit, having read 8 bytes.
  const std::string path = temp_path("huge.safetensors");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  const std::uint64_t n = 120000000;
  char length[8];
  for (int k = 0; k < 8; ++k) length[k] = char((n >> (8 * k)) & 0xff);
  REQUIRE(::write(fd, length, 8) == 8);
  REQUIRE(::ftruncate(fd, 150000000) == 0);
  ::close(fd);
  std::string message;
  try {
    gradsum::read_safetensors(path);
  } catch (const gradsum::Error& e) {
    message = e.what();
  }
  std::remove(path.c_str());
  CHECK(message.find("declares a header of 120000000 bytes, more than the 100000000") !=
        std::string::npos);
}

TEST_CASE("safetensors: malformed headers are refused at the byte where they break") {
  check_refused(file_of("[]"), {"header byte 8: expected '{' opening the header, found '['"});
  check_refused(file_of("{\"a\":{\"dtype\":\"F32\""), {"the header ends where"});
  check_refused(file_of("{\"a\":1}"), {"expected '{' opening a tensor entry"});
  check_refused(file_of("{} x"), {"header byte 11", "nothing after the header's closing"});
  check_refused(file_of("{\"a\x01\":{}}"), {"control characters must be escaped"});
  check_refused(file_of("{\"a\\q\":{}}"), {"expected an escape"});
  check_refused(file_of("{\"\\ud800\":{}}"), {"a high surrogate alone"});
  check_refused(file_of("{\"\xff\":{}}"), {"expected UTF-8 text"});
  check_refused(file_of("{\"__metadata__\":{\"k\":{}}}"),
                {"expected a string value in __metadata__, found '{'"});
  check_refused(file_of("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"),
                {"the __metadata__ key 'k' appears twice"});
  check_refused(one_tensor("[01]", "[0,4]", "abcd"), {"a dimension has a leading zero"});
  check_refused(one_tensor("[-1]", "[0,4]", "abcd"), {"expected a dimension, found '-'"});
  check_refused(one_tensor("[1.5]", "[0,4]", "abcd"), {"expected ',' or ']'"});
  check_refused(one_tensor("[99999999999999999999]", "[0,4]", "abcd"),
                {"a dimension does not fit 64 bits"});
  check_refused(one_tensor("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "[0,4]", "abcd"),
                {"an array of more than 16 integers (a dimension)"});
  check_refused(one_tensor("[1]", "[0,4,8]", "abcd"), {"more than 2 integers (an offset)"});
  check_refused(one_tensor("[1]", "[0]", "abcd"), {"tensor 'a' has 1 data_offsets, expected 2"});
  check_refused(file_of("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "abcd"),
                {"tensor 'a' lacks data_offsets"});
  check_refused(file_of("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\"}}"),
                {"tensor 'a' has dtype twice"});
  check_refused(file_of("{\"a\":{\"bytes\":1}}"),
                {"tensor 'a' has key 'bytes'; expected dtype, shape and data_offsets"});
  const std::string twice = "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                            "\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[1,2]}}";
  check_refused(file_of(twice, "xy"), {"the name 'a' appears twice"});
}

TEST_CASE("safetensors: dtypes, sizes and offsets are checked against the data") {
  check_refused(one_tensor("[1]", "[0,4]", "abcd", "F99"),
                {"tensor 'a' has dtype 'F99', which safetensors does not define"});
  check_refused(one_tensor("[2]", "[0,4]", "abcd"),
                {"tensor 'a' of dtype F32 and shape [2] needs 8 bytes, but its data_offsets "
                 "[0, 4] hold 4"});
  check_refused(one_tensor("[1]", "[0,8]", "abcd"),
                {"tensor 'a' has data_offsets [0, 8], outside the 4 bytes of data"});
  check_refused(one_tensor("[1]", "[4,0]", "abcd"), {"outside the 4 bytes", "begin > end"});
  check_refused(one_tensor("[1]", "[0,18446744073709551615]", "abcd"),
                {"data_offsets [0, 18446744073709551615], outside"});
  // Huge declared sizes: products that overflow 64 bits, and shapes that
  // would need more than the file.
  check_refused(one_tensor("[4294967296,4294967296,16]", "[0,4]", "abcd"),
                {"shape [4294967296, 4294967296, 16] needs more than 2^64 bytes"});
  check_refused(one_tensor("[1000000000000]", "[0,4]", "abcd"),
                {"shape [1000000000000] needs 4000000000000 bytes, but its data_offsets [0, 4] "
                 "hold 4"});
  // Zero elements: 0 bytes, whatever the other extents.
  CHECK(decode_error(one_tensor("[18446744073709551615,0]", "[0,0]", "")) == "accepted");

  const std::string two = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                          "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  check_refused(file_of(two, std::string(8, '\0')),
                {"tensor 'b' at data_offsets [4, 8] overlaps tensor 'a' at [0, 8]"});
  const std::string gap = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  check_refused(file_of(gap, std::string(8, '\0')),
                {"bytes 0 to 4 of the data belong to no tensor (tensor 'a' starts at 4)"});
  check_refused(one_tensor("[1]", "[0,4]", "abcdef"),
                {"the data holds 6 bytes but its tensors end at byte 4"});
}

TEST_CASE("safetensors: read_safetensors refuses what is not a regular file") {
  const std::string folder = temp_folder();
  std::string message;
  try {
    gradsum::read_safetensors(folder);
  } catch (const gradsum::Error& e) {
    message = e.what();
  }
  ::rmdir(folder.c_str());
  CHECK(message.find("is not a regular file (it is a folder)") != std::string::npos);
}
