#include <doctest/doctest.h>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>
#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace trellis;

namespace {

// The readable bytes as "01 02 ff", so a failed CHECK prints something legible.
std::string hex(std::span<const std::byte> bytes) {
  std::string out;
  for (std::byte b : bytes) {
    char cell[4];
    std::snprintf(cell, sizeof(cell), "%02x", std::to_integer<unsigned>(b));
    if (!out.empty()) out.push_back(' ');
    out.append(cell);
  }
  return out;
}
std::string hex(const ByteBuf& buf) { return hex(buf.readable_span()); }

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

// Checks that the default allocator holds as many live buffers at the end of a test as at its
// start (tests run one at a time on one thread).
class DefaultAllocatorBalance {
 public:
  DefaultAllocatorBalance() : start_(ByteBufAllocator::default_allocator().stats().live_buffers) {}
  ~DefaultAllocatorBalance() {
    CHECK(ByteBufAllocator::default_allocator().stats().live_buffers == start_);
  }

 private:
  std::uint64_t start_;
};

}  // namespace

TEST_CASE("a default-constructed ByteBuf is empty and every operation on it is safe") {
  static_assert(sizeof(ByteBuf) <= 32);
  ByteBuf buf;
  CHECK(buf.capacity() == 0);
  CHECK(buf.max_capacity() == 0);
  CHECK(buf.ref_count() == 0);
  CHECK(buf.data() == nullptr);
  CHECK(buf.readable_span().empty());
  CHECK(buf.writable_span().empty());
  CHECK_FALSE(buf.is_readable());
  CHECK_FALSE(buf.is_writable());
  CHECK(buf.to_string().empty());
  CHECK(buf.hex_dump().empty());
  CHECK(buf.index_of(0, 10, 'a') == -1);
  CHECK_THROWS_AS(buf.read_u8(), IndexOutOfBoundsError);
  CHECK_THROWS_AS(buf.get_u32(0), IndexOutOfBoundsError);
  CHECK_THROWS_WITH_AS(buf.write_u8(1), "writer index 0, length 1 exceeds max capacity 0",
                       IndexOutOfBoundsError);
  buf.discard_read_bytes();
  buf.clear();
  buf.ensure_writable(0);
  buf.write_bytes(std::span<const std::byte>());
  CHECK(buf.share().capacity() == 0);
  CHECK(buf.slice(0, 0).capacity() == 0);
  CHECK(buf.copy().ref_count() == 0);
  CHECK(buf.read_string(0).empty());
}

TEST_CASE("a moved-from ByteBuf is empty and the target keeps the storage") {
  DefaultAllocatorBalance balance;
  ByteBuf a = ByteBuf::from("hello");
  const std::byte* data = a.data();
  ByteBuf b = std::move(a);
  CHECK(a.capacity() == 0);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  CHECK(a.data() == nullptr);
  CHECK(b.data() == data);
  CHECK(b.to_string() == "hello");
  ByteBuf c = ByteBuf::from("other");
  c = std::move(b);
  CHECK(c.to_string() == "hello");
  CHECK(c.ref_count() == 1);
  c = ByteBuf();
  CHECK(c.capacity() == 0);
}

TEST_CASE("big-endian writes produce network byte order and read back") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(0);
    buf.write_u8(0x01);
    buf.write_u16(0x0203);
    buf.write_u32(0x04050607);
    buf.write_u64(0x08090a0b0c0d0e0fULL);
    buf.write_i8(-2);
    buf.write_i16(-2);
    buf.write_i32(-2);
    buf.write_i64(-2);
    CHECK(hex(buf) ==
          "01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f fe ff fe ff ff ff fe ff ff ff ff ff ff ff "
          "fe");
    CHECK(buf.read_u8() == 0x01);
    CHECK(buf.read_u16() == 0x0203);
    CHECK(buf.read_u32() == 0x04050607);
    CHECK(buf.read_u64() == 0x08090a0b0c0d0e0fULL);
    CHECK(buf.read_i8() == -2);
    CHECK(buf.read_i16() == -2);
    CHECK(buf.read_i32() == -2);
    CHECK(buf.read_i64() == -2);
    CHECK_FALSE(buf.is_readable());
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("little-endian writes produce reversed byte order and read back") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(0);
    buf.write_u16_le(0x0102);
    buf.write_u32_le(0x03040506);
    buf.write_u64_le(0x0708090a0b0c0d0eULL);
    buf.write_i16_le(-3);
    buf.write_i32_le(-3);
    buf.write_i64_le(-3);
    CHECK(hex(buf) ==
          "02 01 06 05 04 03 0e 0d 0c 0b 0a 09 08 07 fd ff fd ff ff ff fd ff ff ff ff ff ff ff");
    CHECK(buf.read_u16_le() == 0x0102);
    CHECK(buf.read_u32_le() == 0x03040506);
    CHECK(buf.read_u64_le() == 0x0708090a0b0c0d0eULL);
    CHECK(buf.read_i16_le() == -3);
    CHECK(buf.read_i32_le() == -3);
    CHECK(buf.read_i64_le() == -3);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("get and set are absolute and move no index") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(16);
    buf.set_u32(0, 0xdeadbeef);
    buf.set_u16_le(4, 0x1234);
    buf.set_u64(8, 0x0102030405060708ULL);
    buf.set_i8(6, -1);
    buf.set_u8(7, 0x7f);
    CHECK(buf.reader_index() == 0);
    CHECK(buf.writer_index() == 0);
    buf.set_writer_index(16);
    CHECK(hex(buf) == "de ad be ef 34 12 ff 7f 01 02 03 04 05 06 07 08");
    CHECK(buf.get_u32(0) == 0xdeadbeef);
    CHECK(buf.get_u32_le(0) == 0xefbeadde);
    CHECK(buf.get_u16(4) == 0x3412);
    CHECK(buf.get_u16_le(4) == 0x1234);
    CHECK(buf.get_i8(6) == -1);
    CHECK(buf.get_u8(6) == 0xff);
    CHECK(buf.get_u64(8) == 0x0102030405060708ULL);
    CHECK(buf.get_u64_le(8) == 0x0807060504030201ULL);
    CHECK(buf.get_i16(6) == static_cast<std::int16_t>(0xff7f));
    CHECK(buf.get_i32_le(0) == static_cast<std::int32_t>(0xefbeadde));
    CHECK(buf.get_i64(8) == 0x0102030405060708LL);
    CHECK(buf.reader_index() == 0);
    buf.set_i16(0, -2);
    buf.set_i32_le(2, -2);
    buf.set_i64_le(8, -2);
    buf.set_u32_le(0, 0x0a0b0c0d);
    buf.set_i16_le(4, 0x0102);
    buf.set_u64(8, 0);
    buf.set_i64(8, -1);
    CHECK(buf.get_i16_le(4) == 0x0102);
    CHECK(buf.get_i64_le(8) == -1);
    CHECK(buf.get_u32(0) == 0x0d0c0b0a);
    buf.set_i32(0, -5);
    CHECK(buf.get_i32(0) == -5);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("out-of-range access throws IndexOutOfBoundsError with the indexes in the message") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(12, 12);
    CHECK_THROWS_WITH_AS(buf.get_u32(10), "index 10, length 4 exceeds capacity 12",
                         IndexOutOfBoundsError);
    CHECK_THROWS_WITH_AS(buf.set_u64(5, 1), "index 5, length 8 exceeds capacity 12",
                         IndexOutOfBoundsError);
    CHECK_THROWS_WITH_AS(buf.get_u8(99), "index 99, length 1 exceeds capacity 12",
                         IndexOutOfBoundsError);
    buf.write_u16(7);
    buf.write_u8(1);
    CHECK_THROWS_WITH_AS(buf.read_u32(), "reader index 0, length 4 exceeds writer index 3",
                         IndexOutOfBoundsError);
    buf.skip_bytes(2);
    CHECK_THROWS_WITH_AS(buf.read_u16(), "reader index 2, length 2 exceeds writer index 3",
                         IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.skip_bytes(2), IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.read_slice(2), IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.read_string(2), IndexOutOfBoundsError);
    std::array<std::byte, 4> out{};
    CHECK_THROWS_AS(buf.read_bytes(out), IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.get_bytes(10, out), IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.set_bytes(10, out), IndexOutOfBoundsError);
    CHECK_THROWS_WITH_AS(buf.slice(8, 5), "index 8, length 5 exceeds capacity 12",
                         IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.copy(13, 0), IndexOutOfBoundsError);
    CHECK(buf.reader_index() == 2);  // a failed read moves nothing
    CHECK(buf.read_u8() == 1);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("index setters keep 0 <= reader <= writer <= capacity") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(8);
    buf.set_writer_index(6);
    buf.set_reader_index(2);
    CHECK(buf.readable_bytes() == 4);
    CHECK(buf.writable_bytes() == 2);
    CHECK_THROWS_WITH_AS(buf.set_reader_index(7), "reader index 7 exceeds writer index 6",
                         IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.set_writer_index(1), IndexOutOfBoundsError);
    CHECK_THROWS_WITH_AS(buf.set_writer_index(9),
                         "writer index 9 outside [reader index 2, capacity 8]",
                         IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.set_index(5, 4), IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.set_index(0, 9), IndexOutOfBoundsError);
    buf.set_index(1, 8);
    CHECK(buf.reader_index() == 1);
    CHECK(buf.writer_index() == 8);
    CHECK_FALSE(buf.is_writable());
    buf.clear();
    CHECK(buf.reader_index() == 0);
    CHECK(buf.writer_index() == 0);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("writes grow the capacity by doubling up to max capacity, then throw") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(10, 100);
    CHECK(buf.capacity() == 10);
    CHECK(buf.max_capacity() == 100);
    for (int i = 0; i < 11; ++i) buf.write_u8(static_cast<std::uint8_t>(i));
    CHECK(buf.capacity() == 64);
    CHECK(buf.get_u8(10) == 10);
    CHECK(buf.get_u8(0) == 0);
    buf.ensure_writable(60);  // 71 needed: doubling would give 128, clamped to 100
    CHECK(buf.capacity() == 100);
    buf.set_writer_index(100);
    CHECK_THROWS_WITH_AS(buf.write_u8(1), "writer index 100, length 1 exceeds max capacity 100",
                         IndexOutOfBoundsError);
    CHECK_THROWS_AS(buf.ensure_writable(std::size_t{1} << 40), IndexOutOfBoundsError);
    CHECK(alloc.stats().live_buffers == 1);  // the old storage was freed after the move
    CHECK(alloc.stats().total_buffers == 3);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("a buffer alone on a pooled block grows in place into the block's size class") {
  PooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(100);
    const std::byte* data = buf.data();
    CHECK(buf.capacity() == 100);
    buf.set_writer_index(100);
    buf.write_u64(1);
    CHECK(buf.data() == data);  // the 128-byte block had room
    CHECK(buf.capacity() == 128);
    buf.write_bytes(std::vector<std::byte>(30));
    CHECK(buf.data() != data);
    CHECK(buf.capacity() == 256);
    CHECK(buf.get_u64(100) == 1);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("share gives a second handle that sees writes made through the first") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf a = alloc.buffer(16);
    a.write_u32(0x01020304);
    ByteBuf b = a.share();
    CHECK(a.ref_count() == 2);
    CHECK(b.data() == a.data());
    CHECK(b.reader_index() == a.reader_index());
    CHECK(b.writer_index() == 4);
    a.set_u8(0, 0xff);
    CHECK(b.get_u8(0) == 0xff);
    b.write_u8(9);  // b's writer index moves, a's does not; the byte is visible to both
    CHECK(a.writer_index() == 4);
    CHECK(a.get_u8(4) == 9);
    CHECK(alloc.stats().live_buffers == 1);
    a = ByteBuf();
    CHECK(b.ref_count() == 1);
    CHECK(b.read_u32() == 0xff020304);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("growing a shared buffer moves only the growing handle to new storage") {
  PooledByteBufAllocator alloc;
  {
    ByteBuf a = alloc.buffer(8, 1024);
    a.write_u64(0x1122334455667788ULL);
    ByteBuf b = a.share();
    const std::byte* old_data = a.data();
    a.write_u32(0xaabbccdd);  // no room for a: copies into new storage
    CHECK(a.data() != old_data);
    CHECK(b.data() == old_data);
    CHECK(b.capacity() == 8);
    CHECK(a.capacity() == 64);
    CHECK(a.ref_count() == 1);
    CHECK(b.ref_count() == 1);
    a.set_u8(0, 0);
    CHECK(b.get_u8(0) == 0x11);
    CHECK(a.get_u64(0) == 0x0022334455667788ULL);
    CHECK(a.get_u32(8) == 0xaabbccdd);
    // A block with spare room is still not grown into while shared: the other handle could.
    ByteBuf c = alloc.buffer(8);  // a 64-byte block
    c.set_writer_index(8);
    ByteBuf d = c.share();
    const std::byte* c_data = c.data();
    c.write_u8(1);
    CHECK(c.data() != c_data);
    CHECK(d.capacity() == 8);
    d.write_u8(2);
    CHECK(d.data() == c_data);  // d is alone now and may use the block's room
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("slice shares storage and its capacity is fixed to its length") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(16);
    buf.write_string("abcdefgh");
    ByteBuf s = buf.slice(2, 4);
    CHECK(s.to_string() == "cdef");
    CHECK(s.capacity() == 4);
    CHECK(s.max_capacity() == 4);
    CHECK(s.reader_index() == 0);
    CHECK(s.writer_index() == 4);
    CHECK(s.data() == buf.data() + 2);
    s.set_u8(0, 'C');
    CHECK(buf.to_string() == "abCdefgh");
    CHECK_THROWS_AS(s.write_u8(0), IndexOutOfBoundsError);
    ByteBuf whole = buf.slice();
    CHECK(whole.to_string() == "abCdefgh");
    ByteBuf nested = s.slice(1, 2);
    CHECK(nested.to_string() == "de");
    CHECK(buf.ref_count() == 4);
    buf = ByteBuf();
    CHECK(nested.to_string() == "de");  // the storage lives while any handle does
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("read_slice shares storage and advances the reader index") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(16);
    buf.write_string("headbody");
    ByteBuf head = buf.read_slice(4);
    CHECK(head.to_string() == "head");
    CHECK(buf.reader_index() == 4);
    CHECK(head.data() == buf.data());
    CHECK(buf.read_slice(4).to_string() == "body");
    CHECK_FALSE(buf.is_readable());
    CHECK(buf.read_slice(0).capacity() == 0);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("copy has its own storage from the same allocator") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(16);
    buf.write_string("xyz123");
    buf.skip_bytes(3);
    ByteBuf c = buf.copy();
    CHECK(c.to_string() == "123");
    CHECK(c.data() != buf.data() + 3);
    c.set_u8(0, '9');
    CHECK(buf.to_string() == "123");
    CHECK(buf.copy(0, 2).to_string() == "xy");
    CHECK(alloc.stats().total_buffers == 3);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("discard_read_bytes moves the readable bytes to index 0 when unshared") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(8, 8);
    buf.write_string("abcdefgh");
    buf.skip_bytes(5);
    buf.discard_read_bytes();
    CHECK(buf.reader_index() == 0);
    CHECK(buf.writer_index() == 3);
    CHECK(buf.capacity() == 8);
    CHECK(buf.to_string() == "fgh");
    buf.write_string("12345");
    CHECK(buf.to_string() == "fgh12345");
    buf.skip_bytes(8);
    buf.discard_read_bytes();
    CHECK(buf.writer_index() == 0);
    CHECK(buf.writable_bytes() == 8);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("discard_read_bytes on shared storage leaves the other handles' bytes in place") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(8, 64);
    buf.write_string("frame1xx");
    ByteBuf frame = buf.read_slice(6);
    buf.discard_read_bytes();
    CHECK(frame.to_string() == "frame1");
    CHECK(buf.to_string() == "xx");
    CHECK(buf.reader_index() == 0);
    CHECK(buf.capacity() == 2);  // the window moved instead of the bytes
    buf.write_string("more");
    CHECK(buf.to_string() == "xxmore");
    CHECK(frame.to_string() == "frame1");
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("index_of searches forward, backward, clamps to the capacity and returns -1") {
  DefaultAllocatorBalance balance;
  ByteBuf buf = ByteBuf::from("a,b,,c");
  CHECK(buf.index_of(0, 6, ',') == 1);
  CHECK(buf.index_of(2, 6, ',') == 3);
  CHECK(buf.index_of(5, 6, ',') == -1);
  CHECK(buf.index_of(0, 100, 'c') == 5);
  CHECK(buf.index_of(0, 6, 'z') == -1);
  CHECK(buf.index_of(3, 3, ',') == -1);
  CHECK(buf.index_of(6, 0, ',') == 4);  // backward: last ',' in [0, 6)
  CHECK(buf.index_of(4, 0, ',') == 3);
  CHECK(buf.index_of(100, 2, 'a') == -1);
  CHECK(buf.index_of(100, 0, 'a') == 0);
}

TEST_CASE("bytes go in and out with read_bytes, write_bytes, get_bytes and set_bytes") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(4);
    const auto in = bytes({1, 2, 3, 4, 5, 6});
    buf.write_bytes(in);
    CHECK(hex(buf) == "01 02 03 04 05 06");
    std::array<std::byte, 2> two{};
    buf.get_bytes(4, two);
    CHECK(hex(two) == "05 06");
    buf.set_bytes(0, two);
    CHECK(hex(buf) == "05 06 03 04 05 06");
    std::array<std::byte, 4> four{};
    buf.read_bytes(four);
    CHECK(hex(four) == "05 06 03 04");
    CHECK(buf.readable_bytes() == 2);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("write_bytes of a ByteBuf appends its readable bytes and leaves its indexes") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf src = alloc.buffer(8);
    src.write_string("..data");
    src.skip_bytes(2);
    ByteBuf dst = alloc.buffer(2);
    dst.write_bytes(src);
    CHECK(dst.to_string() == "data");
    CHECK(src.reader_index() == 2);
    dst.write_bytes(dst);  // self-append survives the growth it causes
    CHECK(dst.to_string() == "datadata");
    ByteBuf shared = dst.share();
    dst.write_bytes(shared);
    CHECK(dst.to_string() == "datadatadatadata");
    dst.write_bytes(ByteBuf());
    CHECK(dst.readable_bytes() == 16);
    shared = ByteBuf();
    CHECK(dst.capacity() == 64);
    // A span into its own storage, which the third write outgrows (and frees): still copied right.
    for (int i = 0; i < 3; ++i) dst.write_bytes(dst.readable_span());
    CHECK(dst.capacity() == 128);
    std::string expected;
    for (int i = 0; i < 32; ++i) expected += "data";
    CHECK(dst.to_string() == expected);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("strings go in with from and write_string and out with read_string and to_string") {
  DefaultAllocatorBalance balance;
  ByteBuf buf = ByteBuf::from("GET / HTTP/1.1\r\n");
  CHECK(buf.readable_bytes() == 16);
  CHECK(buf.capacity() == 16);
  CHECK(buf.read_string(3) == "GET");
  CHECK(buf.to_string() == " / HTTP/1.1\r\n");
  buf.write_string("Host: x\r\n");
  CHECK(buf.to_string() == " / HTTP/1.1\r\nHost: x\r\n");
  CHECK(ByteBuf::from("").readable_bytes() == 0);
  const auto raw = bytes({0, 1, 2});
  CHECK(hex(ByteBuf::from(raw)) == "00 01 02");
}

TEST_CASE("readable_span and writable_span cover the readable and writable ranges") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(10);
    buf.write_string("abcd");
    buf.skip_bytes(1);
    CHECK(buf.readable_span().data() == buf.data() + 1);
    CHECK(buf.readable_span().size() == 3);
    auto w = buf.writable_span();
    CHECK(w.data() == buf.data() + 4);
    CHECK(w.size() == 6);
    w[0] = std::byte{'e'};
    buf.set_writer_index(buf.writer_index() + 1);
    CHECK(buf.to_string() == "bcde");
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("hex_dump prints Netty's table with absolute row indexes") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf buf = alloc.buffer(32);
    buf.write_string("xx0123456789abcdef");
    buf.write_bytes(bytes({0x00, 0x7f, 0xff}));
    buf.skip_bytes(2);
    const std::string expected =
        "         +-------------------------------------------------+\n"
        "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n"
        "+--------+-------------------------------------------------+----------------+\n"
        "|00000002| 30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66 |0123456789abcdef|\n"
        "|00000012| 00 7f ff                                        |...             |\n"
        "+--------+-------------------------------------------------+----------------+";
    CHECK(buf.hex_dump() == expected);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("handles to one storage may be released on different threads") {
  PooledByteBufAllocator alloc;
  for (int round = 0; round < 50; ++round) {
    ByteBuf buf = alloc.buffer(64);
    buf.write_u64(static_cast<std::uint64_t>(round));
    ByteBuf a = buf.share();
    ByteBuf b = buf.read_slice(4);
    std::thread t1([h = std::move(a)]() mutable { CHECK(h.get_u8(7) < 50); });
    std::thread t2([h = std::move(b)]() mutable { h = ByteBuf(); });
    buf = ByteBuf();
    t1.join();
    t2.join();
  }
  CHECK(alloc.stats().live_buffers == 0);
}
