// HPACK (RFC 7541): the examples of Appendix C through the decoder and the encoder, the integer and
// Huffman coders, every decoding error, the header list limit, table size updates, the encoder's
// indexing policy, a randomized round trip and the allocation budget of a warm codec.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/codec/http2/hpack_decoder.hpp>
#include <trellis/codec/http2/hpack_encoder.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include "hpack_huffman.hpp"
#include "hpack_integer.hpp"

using namespace trellis;
using namespace trellis::http2;
namespace hd = trellis::http2::detail;

namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  int nibble = -1;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      continue;  // spaces
    }
    if (nibble < 0) {
      nibble = v;
    } else {
      out.push_back(static_cast<char>(nibble * 16 + v));
      nibble = -1;
    }
  }
  return out;
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

struct Field {
  std::string name;
  std::string value;
  bool sensitive = false;
  bool operator==(const Field&) const = default;
};

std::vector<Field> decode(HpackDecoder& d, std::string_view block) {
  std::vector<Field> out;
  d.decode(bytes_of(block), [&](std::string_view n, std::string_view v, bool s) {
    out.push_back({std::string(n), std::string(v), s});
  });
  return out;
}

std::string encode(HpackEncoder& e, const std::vector<Field>& fields) {
  std::vector<HpackHeader> headers;
  for (const auto& f : fields) headers.push_back({f.name, f.value, f.sensitive});
  ByteBuf out = ByteBuf::from("");
  e.encode(headers, out);
  return out.to_string();
}

// The table as "name: value" lines, newest first.
std::vector<std::string> entries(const HpackDynamicTable& t) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < t.length(); ++i) {
    out.push_back(std::string(t.name(i)) + ": " + std::string(t.value(i)));
  }
  return out;
}

std::string encode_int(std::uint8_t flags, int prefix, std::uint32_t v) {
  ByteBuf out = ByteBuf::from("");
  hd::encode_integer(flags, prefix, v, out);
  return out.to_string();
}

hd::IntegerError decode_int(std::string_view in, int prefix, std::uint32_t& v, std::size_t& pos) {
  pos = 0;
  return hd::decode_integer(bytes_of(in), pos, prefix, v);
}

struct Step {
  std::vector<Field> fields;
  std::string wire;  // hex
  std::vector<std::string> table;
  std::size_t table_size;
};

const std::vector<Field> kRequest1 = {
    {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}};
const std::vector<Field> kRequest2 = {{":method", "GET"},
                                      {":scheme", "http"},
                                      {":path", "/"},
                                      {":authority", "www.example.com"},
                                      {"cache-control", "no-cache"}};
const std::vector<Field> kRequest3 = {{":method", "GET"},
                                      {":scheme", "https"},
                                      {":path", "/index.html"},
                                      {":authority", "www.example.com"},
                                      {"custom-key", "custom-value"}};
const std::vector<std::string> kRequestTable1 = {":authority: www.example.com"};
const std::vector<std::string> kRequestTable2 = {"cache-control: no-cache",
                                                 ":authority: www.example.com"};
const std::vector<std::string> kRequestTable3 = {
    "custom-key: custom-value", "cache-control: no-cache", ":authority: www.example.com"};

const std::vector<Field> kResponse1 = {{":status", "302"},
                                       {"cache-control", "private"},
                                       {"date", "Mon, 21 Oct 2013 20:13:21 GMT"},
                                       {"location", "https://www.example.com"}};
const std::vector<Field> kResponse2 = {{":status", "307"},
                                       {"cache-control", "private"},
                                       {"date", "Mon, 21 Oct 2013 20:13:21 GMT"},
                                       {"location", "https://www.example.com"}};
const std::vector<Field> kResponse3 = {
    {":status", "200"},
    {"cache-control", "private"},
    {"date", "Mon, 21 Oct 2013 20:13:22 GMT"},
    {"location", "https://www.example.com"},
    {"content-encoding", "gzip"},
    {"set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"}};
const std::vector<std::string> kResponseTable1 = {"location: https://www.example.com",
                                                  "date: Mon, 21 Oct 2013 20:13:21 GMT",
                                                  "cache-control: private", ":status: 302"};
const std::vector<std::string> kResponseTable2 = {
    ":status: 307", "location: https://www.example.com", "date: Mon, 21 Oct 2013 20:13:21 GMT",
    "cache-control: private"};
const std::vector<std::string> kResponseTable3 = {
    "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
    "content-encoding: gzip", "date: Mon, 21 Oct 2013 20:13:22 GMT"};

const std::vector<Step> kC3 = {
    {kRequest1, "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", kRequestTable1, 57},
    {kRequest2, "8286 84be 5808 6e6f 2d63 6163 6865", kRequestTable2, 110},
    {kRequest3, "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
     kRequestTable3, 164},
};
const std::vector<Step> kC4 = {
    {kRequest1, "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", kRequestTable1, 57},
    {kRequest2, "8286 84be 5886 a8eb 1064 9cbf", kRequestTable2, 110},
    {kRequest3, "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf", kRequestTable3, 164},
};
const std::vector<Step> kC5 = {
    {kResponse1,
     "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133"
     "2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70"
     "6c65 2e63 6f6d",
     kResponseTable1, 222},
    {kResponse2, "4803 3330 37c1 c0bf", kResponseTable2, 222},
    {kResponse3,
     "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d"
     "54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049"
     "5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e"
     "3d31",
     kResponseTable3, 215},
};
const std::vector<Step> kC6 = {
    {kResponse1,
     "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6"
     "2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
     kResponseTable1, 222},
    {kResponse2, "4883 640e ffc1 c0bf", kResponseTable2, 222},
    {kResponse3,
     "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab"
     "77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f"
     "9587 3160 65c0 03ed 4ee5 b106 3d50 07",
     kResponseTable3, 215},
};

void check_decoder(const std::vector<Step>& steps, std::uint32_t table_size) {
  HpackDecoder d(table_size);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    CHECK(decode(d, unhex(steps[i].wire)) == steps[i].fields);
    CHECK(entries(d.table()) == steps[i].table);
    CHECK(d.table().size() == steps[i].table_size);
  }
}

// The encoder, configured with the RFC's choices, writes the RFC's bytes. `prefix` is what the
// first block starts with before them (the size update of a table smaller than 4096).
void check_encoder(const std::vector<Step>& steps, HpackEncoderOptions options,
                   std::string_view prefix = "") {
  options.indexing = HpackIndexing::kAll;
  HpackEncoder e(options);
  HpackDecoder d(options.max_table_size);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    const std::string wire = encode(e, steps[i].fields);
    CHECK(hex(wire) == (i == 0 ? std::string(prefix) : "") + hex(unhex(steps[i].wire)));
    CHECK(entries(e.table()) == steps[i].table);
    CHECK(decode(d, wire) == steps[i].fields);
  }
}

}  // namespace

TEST_CASE("hpack integers: RFC 7541 C.1") {
  CHECK(hex(encode_int(0, 5, 10)) == "0a");        // C.1.1
  CHECK(hex(encode_int(0, 5, 1337)) == "1f9a0a");  // C.1.2
  CHECK(hex(encode_int(0, 8, 42)) == "2a");        // C.1.3
  CHECK(hex(encode_int(0xe0, 5, 10)) == "ea");     // flags above the prefix are kept
  std::uint32_t v = 0;
  std::size_t pos = 0;
  CHECK(decode_int(unhex("0a"), 5, v, pos) == hd::IntegerError::kNone);
  CHECK(v == 10);
  CHECK(decode_int(unhex("ff9a0a"), 5, v, pos) == hd::IntegerError::kNone);  // flags ignored
  CHECK(v == 1337);
  CHECK(pos == 3);
  CHECK(decode_int(unhex("2a"), 8, v, pos) == hd::IntegerError::kNone);
  CHECK(v == 42);
  for (std::uint32_t value : {0u, 30u, 31u, 32u, 127u, 128u, 16384u, 0xfffffffeu, 0xffffffffu}) {
    for (int prefix = 1; prefix <= 8; ++prefix) {
      CAPTURE(value);
      CAPTURE(prefix);
      const std::string wire = encode_int(0, prefix, value);
      REQUIRE(decode_int(wire, prefix, v, pos) == hd::IntegerError::kNone);
      CHECK(v == value);
      CHECK(pos == wire.size());
    }
  }
}

TEST_CASE("hpack integers: overflow, too many continuation bytes and truncation are refused") {
  std::uint32_t v = 0;
  std::size_t pos = 0;
  // 31 + (2^32 - 32) = 2^32 - 1 fits; one more does not.
  CHECK(decode_int(unhex("1f e0 ff ff ff 0f"), 5, v, pos) == hd::IntegerError::kNone);
  CHECK(v == 0xffffffffu);
  CHECK(decode_int(unhex("1f e1 ff ff ff 0f"), 5, v, pos) == hd::IntegerError::kOverflow);
  CHECK(decode_int(unhex("1f ff ff ff ff 7f"), 5, v, pos) == hd::IntegerError::kOverflow);
  // Zero-valued continuation bytes past the fifth are refused too.
  CHECK(decode_int(unhex("1f 80 80 80 80 00"), 5, v, pos) == hd::IntegerError::kNone);
  CHECK(decode_int(unhex("1f 80 80 80 80 80 00"), 5, v, pos) == hd::IntegerError::kOverflow);
  CHECK(decode_int(unhex("1f 80 80 80 80 80 80 80 80 80 00"), 5, v, pos) ==
        hd::IntegerError::kOverflow);
  CHECK(decode_int("", 5, v, pos) == hd::IntegerError::kTruncated);
  CHECK(decode_int(unhex("1f"), 5, v, pos) == hd::IntegerError::kTruncated);
  CHECK(decode_int(unhex("1f 9a"), 5, v, pos) == hd::IntegerError::kTruncated);

  HpackDecoder d;
  CHECK_THROWS_AS(decode(d, unhex("ff ff ff ff ff 7f")), HpackDecodingError);     // indexed
  CHECK_THROWS_AS(decode(d, unhex("00 7f ff ff ff ff 7f")), HpackDecodingError);  // string length
}

TEST_CASE("hpack header fields: RFC 7541 C.2") {
  SUBCASE("C.2.1 literal with indexing") {
    HpackDecoder d;
    const std::string wire =
        unhex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    CHECK(decode(d, wire) == std::vector<Field>{{"custom-key", "custom-header"}});
    CHECK(entries(d.table()) == std::vector<std::string>{"custom-key: custom-header"});
    CHECK(d.table().size() == 55);
    HpackEncoder e({.indexing = HpackIndexing::kAll, .huffman = HpackHuffman::kNever});
    CHECK(encode(e, {{"custom-key", "custom-header"}}) == wire);
    CHECK(e.table().size() == 55);
  }
  SUBCASE("C.2.2 literal without indexing") {
    HpackDecoder d;
    const std::string wire = unhex("040c 2f73 616d 706c 652f 7061 7468");
    CHECK(decode(d, wire) == std::vector<Field>{{":path", "/sample/path"}});
    CHECK(d.table().length() == 0);
    // The default policy does not index :path.
    HpackEncoder e({.huffman = HpackHuffman::kNever});
    CHECK(encode(e, {{":path", "/sample/path"}}) == wire);
    CHECK(e.table().length() == 0);
  }
  SUBCASE("C.2.3 literal never indexed") {
    HpackDecoder d;
    const std::string wire = unhex("1008 7061 7373 776f 7264 0673 6563 7265 74");
    CHECK(decode(d, wire) == std::vector<Field>{{"password", "secret", true}});
    CHECK(d.table().length() == 0);
    HpackEncoder e({.indexing = HpackIndexing::kAll, .huffman = HpackHuffman::kNever});
    CHECK(encode(e, {{"password", "secret", true}}) == wire);
    CHECK(e.table().length() == 0);
  }
  SUBCASE("C.2.4 indexed") {
    HpackDecoder d;
    CHECK(decode(d, unhex("82")) == std::vector<Field>{{":method", "GET"}});
    HpackEncoder e;
    CHECK(hex(encode(e, {{":method", "GET"}})) == "82");
  }
}

TEST_CASE("hpack requests without Huffman: RFC 7541 C.3") {
  check_decoder(kC3, 4096);
  check_encoder(kC3, {.huffman = HpackHuffman::kNever});
}

TEST_CASE("hpack requests with Huffman: RFC 7541 C.4") {
  check_decoder(kC4, 4096);
  check_encoder(kC4, {});
}

TEST_CASE("hpack responses without Huffman, evicting at 256 octets: RFC 7541 C.5") {
  check_decoder(kC5, 256);
  // The RFC's peers start at 256; this encoder starts at the protocol's 4096 and announces 256.
  check_encoder(kC5, {.max_table_size = 256, .huffman = HpackHuffman::kNever}, "3fe101");
}

TEST_CASE("hpack responses with Huffman, evicting at 256 octets: RFC 7541 C.6") {
  check_decoder(kC6, 256);
  check_encoder(kC6, {.max_table_size = 256}, "3fe101");
}

TEST_CASE("hpack Huffman: every byte round-trips, alone and all together") {
  std::string all;
  std::string decoded;
  for (int c = 0; c < 256; ++c) {
    const std::string one(1, static_cast<char>(c));
    ByteBuf buf = ByteBuf::from("");
    hd::huffman_encode(one, buf);
    CHECK(buf.readable_bytes() == hd::huffman_encoded_length(one));
    REQUIRE(hd::huffman_decode(buf.readable_span(), decoded) == hd::HuffmanError::kNone);
    CHECK(decoded == one);
    all += one;
  }
  for (const std::string& text : {all, std::string(all.rbegin(), all.rend()), std::string()}) {
    ByteBuf buf = ByteBuf::from("");
    hd::huffman_encode(text, buf);
    CHECK(buf.readable_bytes() == hd::huffman_encoded_length(text));
    REQUIRE(hd::huffman_decode(buf.readable_span(), decoded) == hd::HuffmanError::kNone);
    CHECK(decoded == text);
  }
  // RFC 7541 C.4.1's string.
  ByteBuf buf = ByteBuf::from("");
  hd::huffman_encode("www.example.com", buf);
  CHECK(hex(buf.to_string()) == "f1e3c2e5f23a6ba0ab90f4ff");
}

TEST_CASE("hpack Huffman: EOS, long padding and padding other than ones are refused") {
  std::string out;
  auto dec = [&](std::string_view h) { return hd::huffman_decode(bytes_of(unhex(h)), out); };
  CHECK(dec("ffffffff") == hd::HuffmanError::kEos);         // EOS (30 ones) + 2 bits of padding
  CHECK(dec("1fffffffff") == hd::HuffmanError::kEos);       // 'a' then EOS
  CHECK(dec("1fff") == hd::HuffmanError::kPaddingTooLong);  // 'a' + 11 ones
  CHECK(dec("ff") == hd::HuffmanError::kPaddingTooLong);    // 8 ones
  CHECK(dec("18") == hd::HuffmanError::kPaddingNotOnes);    // 'a' + 000
  CHECK(dec("1e") == hd::HuffmanError::kPaddingNotOnes);    // 'a' + 110
  CHECK(dec("1f") == hd::HuffmanError::kNone);              // 'a' + 111
  CHECK(out == "a");
  CHECK(dec("") == hd::HuffmanError::kNone);
  CHECK(out.empty());
  // Through the decoder: a literal value Huffman-coded with bad padding.
  HpackDecoder d;
  CHECK_THROWS_AS(decode(d, unhex("04 81 18")), HpackDecodingError);
  CHECK_THROWS_AS(decode(d, unhex("04 84 ffffffff")), HpackDecodingError);
  CHECK_THROWS_AS(decode(d, unhex("04 82 1fff")), HpackDecodingError);
  CHECK(decode(d, unhex("04 81 1f")) == std::vector<Field>{{":path", "a"}});
}

TEST_CASE("hpack decoder: indexes 0 and beyond the tables are refused") {
  HpackDecoder d;
  CHECK_THROWS_AS(decode(d, unhex("80")), HpackDecodingError);
  CHECK(decode(d, unhex("bd")) == std::vector<Field>{{"www-authenticate", ""}});  // 61
  CHECK_THROWS_AS(decode(d, unhex("be")), HpackDecodingError);                    // 62, empty
  CHECK_THROWS_AS(decode(d, unhex("7e 01 78")), HpackDecodingError);              // name index 62
  CHECK_THROWS_AS(decode(d, unhex("0f 2f 01 78")), HpackDecodingError);           // name index 62
  decode(d, unhex("40 01 61 01 62"));                                             // a: b at 62
  CHECK(decode(d, unhex("be")) == std::vector<Field>{{"a", "b"}});
  CHECK(decode(d, unhex("7e 01 63")) == std::vector<Field>{{"a", "c"}});
  CHECK_THROWS_AS(decode(d, unhex("c0")), HpackDecodingError);  // 64: two entries
  try {
    decode(d, unhex("82 80"));
    FAIL("no error");
  } catch (const HpackDecodingError& e) {
    CHECK(e.position() == 1);
  }
}

TEST_CASE("hpack decoder: every truncation of a block is refused, except at field boundaries") {
  struct Case {
    const std::vector<Step>* steps;
    std::uint32_t table_size;
    std::vector<std::size_t> boundaries;  // of the last block's fields
  };
  const std::vector<Case> cases = {
      {&kC3, 4096, {0, 1, 2, 3, 4, 29}},
      {&kC4, 4096, {0, 1, 2, 3, 4, 24}},
      {&kC6, 256, {0, 1, 2, 26, 27, 32, 79}},
  };
  for (const auto& c : cases) {
    const std::string last = unhex(c.steps->back().wire);
    REQUIRE(c.boundaries.back() == last.size());
    for (std::size_t cut = 0; cut <= last.size(); ++cut) {
      CAPTURE(cut);
      HpackDecoder d(c.table_size);
      for (std::size_t i = 0; i + 1 < c.steps->size(); ++i) decode(d, unhex((*c.steps)[i].wire));
      const std::string_view prefix = std::string_view(last).substr(0, cut);
      std::size_t field = 0;
      while (field < c.boundaries.size() && c.boundaries[field] < cut) ++field;
      if (field < c.boundaries.size() && c.boundaries[field] == cut) {
        const auto& all = c.steps->back().fields;
        CHECK(decode(d, prefix) == std::vector<Field>(all.begin(), all.begin() + field));
      } else {
        CHECK_THROWS_AS(decode(d, prefix), HpackDecodingError);
      }
    }
  }
}

TEST_CASE("hpack decoder: a block in fragments, split anywhere, decodes as a whole") {
  const std::string last = unhex(kC4[2].wire);
  for (std::size_t a = 0; a <= last.size(); ++a) {
    for (std::size_t b = a; b <= last.size(); b += 3) {
      CAPTURE(a);
      CAPTURE(b);
      HpackDecoder d;
      decode(d, unhex(kC4[0].wire));
      decode(d, unhex(kC4[1].wire));
      std::vector<ByteBuf> fragments;
      fragments.push_back(ByteBuf::from(last.substr(0, a)));
      fragments.push_back(ByteBuf::from(last.substr(a, b - a)));
      fragments.push_back(ByteBuf::from(last.substr(b)));
      std::vector<Field> out;
      d.decode(std::span<const ByteBuf>(fragments),
               [&](std::string_view n, std::string_view v, bool s) {
                 out.push_back({std::string(n), std::string(v), s});
               });
      CHECK(out == kRequest3);
      CHECK(entries(d.table()) == kRequestTable3);
    }
  }
  // A truncated last fragment is an error at the joined offset.
  HpackDecoder d;
  std::vector<ByteBuf> fragments;
  fragments.push_back(ByteBuf::from(unhex("82 86")));
  fragments.push_back(ByteBuf::from(unhex("84 41 8c f1")));
  try {
    d.decode(std::span<const ByteBuf>(fragments), [](std::string_view, std::string_view, bool) {});
    FAIL("no error");
  } catch (const HpackDecodingError& e) {
    CHECK(e.position() == 4);
  }
}

TEST_CASE("hpack decoder: table size updates") {
  SUBCASE("an update to 0 empties the table; one above the limit is refused") {
    HpackDecoder d;
    decode(d, unhex(kC3[0].wire));
    CHECK(d.table().length() == 1);
    CHECK(decode(d, unhex("20 3fe11f 82")) == std::vector<Field>{{":method", "GET"}});
    CHECK(d.table().length() == 0);
    CHECK(d.table().max_size() == 4096);
    CHECK_THROWS_AS(decode(d, unhex("3fe21f")), HpackDecodingError);  // 4097
    CHECK_THROWS_AS(decode(d, unhex("3fe1ffffff0f")), HpackDecodingError);
  }
  SUBCASE("an update after a field is refused") {
    HpackDecoder d;
    CHECK_THROWS_AS(decode(d, unhex("82 20")), HpackDecodingError);
    CHECK_THROWS_AS(decode(d, unhex("20 82 3f01")), HpackDecodingError);
  }
  SUBCASE("after the limit is lowered, the next block must start with an update within it") {
    HpackDecoder d;
    decode(d, unhex(kC3[0].wire));
    d.set_max_table_size(100);
    CHECK_THROWS_AS(decode(d, unhex("82")), HpackDecodingError);
    HpackDecoder d2;
    decode(d2, unhex(kC3[0].wire));
    d2.set_max_table_size(100);
    CHECK_THROWS_AS(decode(d2, unhex("3f 46")), HpackDecodingError);  // 101
    HpackDecoder d3;
    decode(d3, unhex(kC3[0].wire));
    d3.set_max_table_size(100);
    CHECK(decode(d3, unhex("3f 45 82")) == std::vector<Field>{{":method", "GET"}});  // 100
    CHECK(d3.table().max_size() == 100);
    CHECK(d3.table().length() == 1);  // 57 octets fit
    CHECK(decode(d3, unhex("82")).size() == 1);
    // Raising the limit asks for nothing.
    d3.set_max_table_size(8192);
    CHECK(decode(d3, unhex("82")).size() == 1);
    CHECK(decode(d3, unhex("3f e1 3f 82")).size() == 1);  // 8192
    CHECK(d3.table().max_size() == 8192);
  }
}

TEST_CASE(
    "hpack decoder: the header list limit stops the sink mid-block, the table stays in step") {
  HpackDecoder d;
  decode(d, unhex(kC3[0].wire));
  decode(d, unhex(kC3[1].wire));
  d.set_max_header_list_size(100);
  // C.3.3: 42 + 44 octets, then :path /index.html (48) passes 100 at offset 2.
  std::vector<Field> seen;
  try {
    d.decode(bytes_of(unhex(kC3[2].wire)), [&](std::string_view n, std::string_view v, bool s) {
      seen.push_back({std::string(n), std::string(v), s});
    });
    FAIL("no error");
  } catch (const HpackHeaderListTooLargeError& e) {
    CHECK(e.position() == 2);
  }
  CHECK(seen == std::vector<Field>(kRequest3.begin(), kRequest3.begin() + 2));
  // The rest of the block was decoded for the table: custom-key was added.
  CHECK(entries(d.table()) == kRequestTable3);
  // A block within the limit decodes after it.
  CHECK(decode(d, unhex("82 be")) ==
        std::vector<Field>{{":method", "GET"}, {"custom-key", "custom-value"}});
  // A single field over the limit, and invalid HPACK after the limit was passed.
  CHECK_THROWS_AS(decode(d, unhex("00 01 61 7f 0a") + std::string(137, 'x')),
                  HpackHeaderListTooLargeError);
  CHECK_THROWS_AS(decode(d, unhex("00 01 61 7f 0a") + std::string(137, 'x') + unhex("80")),
                  HpackDecodingError);
  // Once over the limit, a field that is not indexed is skipped undecoded: its bad Huffman code
  // goes unnoticed. An indexed one is still decoded, and still checked.
  CHECK_THROWS_AS(
      decode(d, unhex("00 01 61 7f 0a") + std::string(137, 'x') + unhex("04 84 ffffffff")),
      HpackHeaderListTooLargeError);
  CHECK_THROWS_AS(
      decode(d, unhex("00 01 61 7f 0a") + std::string(137, 'x') + unhex("44 84 ffffffff")),
      HpackDecodingError);
  // A Huffman string that alone passes the limit (400 octets decode to at least 106) is not
  // decoded either.
  try {
    decode(d, unhex("82 00 01 61 ff 91 02") + std::string(400, '\xff'));
    FAIL("no error");
  } catch (const HpackHeaderListTooLargeError& e) {
    CHECK(e.position() == 1);
  }
  // The limit can be set later (SETTINGS_MAX_HEADER_LIST_SIZE).
  d.set_max_header_list_size(1000);
  CHECK(decode(d, unhex("00 01 61 7f 0a") + std::string(137, 'x')).size() == 1);
}

TEST_CASE("hpack encoder: table size updates follow the peer's SETTINGS_HEADER_TABLE_SIZE") {
  HpackEncoder e({.indexing = HpackIndexing::kAll});
  HpackDecoder d;
  CHECK(decode(d, encode(e, kRequest1)) == kRequest1);
  SUBCASE("no change, no update; a raise beyond the encoder's own limit changes nothing") {
    e.set_peer_max_table_size(4096);
    e.set_peer_max_table_size(65536);
    CHECK(hex(encode(e, kRequest1)) == "828684be");
  }
  SUBCASE("the smallest size first, then the final one") {
    e.set_peer_max_table_size(0);
    e.set_peer_max_table_size(1000);
    e.set_peer_max_table_size(4096);
    d.set_max_table_size(4096);
    const std::string wire = encode(e, kRequest1);
    CHECK(
        hex(wire).starts_with("20"
                              "3fe11f"));
    CHECK(decode(d, wire) == kRequest1);
    CHECK(entries(d.table()) == entries(e.table()));
  }
  SUBCASE("a lower size alone") {
    e.set_peer_max_table_size(1024);
    d.set_max_table_size(1024);
    const std::string wire = encode(e, kRequest1);
    CHECK(hex(wire).starts_with("3fe107"));
    CHECK(decode(d, wire) == kRequest1);
    CHECK(d.table().max_size() == 1024);
    CHECK(e.table().max_size() == 1024);
  }
  SUBCASE("a table of 0: nothing is indexed") {
    e.set_peer_max_table_size(0);
    d.set_max_table_size(0);
    CHECK(decode(d, encode(e, kRequest3)) == kRequest3);
    CHECK(e.table().length() == 0);
    CHECK(d.table().length() == 0);
  }
}

TEST_CASE("hpack encoder: the default policy keeps credentials and one-off values out of tables") {
  HpackEncoder e;
  HpackDecoder d;
  const std::vector<Field> fields = {{"authorization", "Bearer abc"},
                                     {"cookie", "a=b"},
                                     {"cookie", "session=0123456789abcdef"},
                                     {"set-cookie", "id=1"},
                                     {":path", "/a"},
                                     {"x-secret", "s", true},
                                     {"content-length", "10"},
                                     {"user-agent", "curl/8"},
                                     {"x-big", std::string(3100, 'x')}};
  const std::string wire = encode(e, fields);
  std::vector<Field> expected = fields;
  expected[0].sensitive = true;  // authorization
  expected[1].sensitive = true;  // a short cookie
  const auto decoded = decode(d, wire);
  CHECK(decoded == expected);
  CHECK(entries(e.table()) ==
        std::vector<std::string>{"user-agent: curl/8", "cookie: session=0123456789abcdef"});
  CHECK(entries(d.table()) == entries(e.table()));
  // authorization: never indexed with the static name 23 (4-bit prefix: 0x1f 0x08).
  CHECK(hex(wire).starts_with("1f08"));
  // The second time, the indexed fields are single bytes.
  const std::string again =
      encode(e, {{"user-agent", "curl/8"}, {"cookie", "session=0123456789abcdef"}});
  CHECK(hex(again) == "bebf");
  // With kAll, every field that fits goes in, except the sensitive ones.
  HpackEncoder all({.indexing = HpackIndexing::kAll});
  encode(all, fields);
  CHECK(all.table().length() == 8);
  CHECK(all.table().name(0) == "x-big");
}

TEST_CASE("hpack: entries larger than the table, and a new entry named after the one it evicts") {
  SUBCASE("the decoder: a literal with indexing larger than the table empties it (§4.4)") {
    HpackDecoder d(100);
    decode(d, unhex("40 01 61 01 62"));  // a: b (34)
    CHECK(decode(d, unhex("40 01 63 40") + std::string(64, 'x')) ==
          std::vector<Field>{{"c", std::string(64, 'x')}});  // 97 octets: fits
    CHECK(d.table().length() == 1);
    CHECK(decode(d, unhex("40 01 63 41") + std::string(65, 'x')).size() == 1);  // 98: fits
    CHECK(decode(d, unhex("40 01 63 44") + std::string(68, 'x')).size() == 1);  // 101: too large
    CHECK(d.table().length() == 0);
    CHECK(d.table().size() == 0);
  }
  SUBCASE("the encoder: a field larger than the table is sent without indexing") {
    HpackEncoder e({.max_table_size = 100, .indexing = HpackIndexing::kAll});
    HpackDecoder d(100);
    ByteBuf out = ByteBuf::from("");
    e.encode(std::vector<HpackHeader>{{"a", "b"}}, out);
    CHECK(e.table().length() == 1);
    const std::string big(68, 'x');
    CHECK(decode(d, out.to_string()) == std::vector<Field>{{"a", "b"}});
    const std::string wire = encode(e, {{"c", big}});
    CHECK(hex(wire).substr(0, 2) == "00");
    CHECK(e.table().length() == 1);  // untouched
    CHECK(decode(d, wire) == std::vector<Field>{{"c", big}});
    CHECK(entries(d.table()) == entries(e.table()));
  }
  SUBCASE("the decoder: the name of an entry evicted by the insertion that refers to it") {
    HpackDecoder d(63);                            // one entry at most
    decode(d, unhex("40 03 616263 04 31323334"));  // abc: 1234 (39)
    CHECK(decode(d, unhex("7e 04 78797a77")) == std::vector<Field>{{"abc", "xyzw"}});
    CHECK(entries(d.table()) == std::vector<std::string>{"abc: xyzw"});
    // A ninth entry grows the table's ring of 8 slots, moving the entry its name comes from.
    HpackDecoder d2;
    for (char c = '0'; c < '8'; ++c) decode(d2, unhex("40 02 6e") + c + unhex("01 76"));
    CHECK(decode(d2, unhex("7e 01 78")) == std::vector<Field>{{"n7", "x"}});
    CHECK(d2.table().length() == 9);
    CHECK(d2.table().name(0) == "n7");
    CHECK(d2.table().name(1) == "n7");
    CHECK(d2.table().name(8) == "n0");
  }
}

TEST_CASE("hpack dynamic table: ring growth, wrap-around and eviction keep the order") {
  HpackDynamicTable t(32 * 20);
  for (int i = 0; i < 100; ++i) {
    t.add("n", std::to_string(i % 10));  // 34 octets each
    REQUIRE(t.size() <= t.max_size());
    REQUIRE(t.value(0) == std::to_string(i % 10));
    if (i >= 2) REQUIRE(t.value(2) == std::to_string((i - 2) % 10));
  }
  CHECK(t.length() == 18);
  t.set_max_size(34 * 3);
  CHECK(t.length() == 3);
  CHECK(t.value(2) == "7");
  t.add("name", std::string(200, 'v'));  // larger than the table: empties it
  CHECK(t.length() == 0);
  CHECK(t.size() == 0);
}

TEST_CASE("hpack round trip: random header lists across table size changes (fixed seed)") {
  std::mt19937 rng(7541);
  const std::vector<std::string> names = {
      ":method",       ":path",      ":authority",
      "accept",        "user-agent", "cookie",
      "authorization", "x-a",        "x-bbbbbbbbbbbbbbbbbbbbbbb",
      "set-cookie",    "date"};
  auto random_string = [&](std::size_t max) {
    std::string s(rng() % (max + 1), '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 26);
    return s;
  };
  std::vector<std::string> values;
  for (int i = 0; i < 40; ++i) values.push_back(random_string(i % 5 == 0 ? 300 : 20));
  for (auto indexing : {HpackIndexing::kDefault, HpackIndexing::kAll}) {
    for (auto huffman : {HpackHuffman::kWhenNotLonger, HpackHuffman::kNever}) {
      HpackEncoder e({.max_table_size = 2048, .indexing = indexing, .huffman = huffman});
      HpackDecoder d(4096, 1 << 20);
      for (int block = 0; block < 300; ++block) {
        CAPTURE(block);
        if (rng() % 10 == 0) {
          const std::uint32_t sizes[] = {0, 64, 256, 1000, 4096, 8192};
          const std::uint32_t size = sizes[rng() % 6];
          d.set_max_table_size(size);
          e.set_peer_max_table_size(size);
          if (rng() % 2 == 0) {
            const std::uint32_t again = sizes[rng() % 6];
            d.set_max_table_size(again);
            e.set_peer_max_table_size(again);
          }
        }
        std::vector<Field> fields(rng() % 12);
        for (auto& f : fields) {
          f.name = rng() % 8 == 0 ? random_string(10) : names[rng() % names.size()];
          f.value = values[rng() % values.size()];
          f.sensitive = rng() % 16 == 0;
        }
        const auto decoded = decode(d, encode(e, fields));
        REQUIRE(decoded.size() == fields.size());
        for (std::size_t i = 0; i < fields.size(); ++i) {
          CHECK(decoded[i].name == fields[i].name);
          CHECK(decoded[i].value == fields[i].value);
          if (fields[i].sensitive) CHECK(decoded[i].sensitive);
        }
        REQUIRE(entries(d.table()) == entries(e.table()));
        REQUIRE(d.table().size() == e.table().size());
      }
    }
  }
}

TEST_CASE("hpack: a warm encoder and decoder allocate nothing per block") {
  REQUIRE(testing::allocation_hook_installed());
  const std::vector<HpackHeader> request = {
      {":method", "GET"},
      {":scheme", "https"},
      {":path", "/index.html"},
      {":authority", "www.example.com"},
      {"user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"},
      {"accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
      {"accept-encoding", "gzip, deflate, br"},
      {"accept-language", "en-US,en;q=0.5"},
      {"cookie", "session=0123456789abcdef0123"},
      {"authorization", "Bearer abc"}};
  HpackEncoder e;
  HpackDecoder d;
  ByteBuf out = ByteBufAllocator::default_allocator().buffer(4096);
  std::size_t total = 0;
  auto sink = [&](std::string_view n, std::string_view v, bool) { total += n.size() + v.size(); };
  for (int i = 0; i < 3; ++i) {
    out.clear();
    e.encode(request, out);
    d.decode(out, sink);
  }
  // The same block in two fragments, as HEADERS + CONTINUATION.
  std::vector<ByteBuf> fragments;
  fragments.push_back(out.slice(0, out.readable_bytes() / 2));
  fragments.push_back(
      out.slice(out.readable_bytes() / 2, out.readable_bytes() - out.readable_bytes() / 2));
  d.decode(std::span<const ByteBuf>(fragments), sink);
  testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) {
    out.clear();
    e.encode(request, out);
    d.decode(out, sink);
    d.decode(std::span<const ByteBuf>(fragments), sink);
  }
  CHECK(scope.count() == 0);
  CHECK(total > 0);
}
