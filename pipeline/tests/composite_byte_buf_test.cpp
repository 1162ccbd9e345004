#include <doctest/doctest.h>

#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include <unistd.h>

#include <array>
#include <string>
#include <vector>

using namespace trellis;

namespace {

ByteBuf make(ByteBufAllocator& alloc, std::initializer_list<int> values) {
  ByteBuf buf = alloc.buffer(values.size());
  for (int v : values) buf.write_u8(static_cast<std::uint8_t>(v));
  return buf;
}

ByteBuf make(ByteBufAllocator& alloc, std::string_view text) {
  ByteBuf buf = alloc.buffer(text.size());
  buf.write_string(text);
  return buf;
}

}  // namespace

TEST_CASE("an empty composite has nothing readable and its reads throw") {
  CompositeByteBuf comp;
  CHECK(comp.num_components() == 0);
  CHECK(comp.readable_bytes() == 0);
  CHECK_FALSE(comp.is_readable());
  CHECK_THROWS_WITH_AS(comp.read_u8(), "reader index 0, length 1 exceeds writer index 0",
                       IndexOutOfBoundsError);
  CHECK_THROWS_AS(comp.get_u16(0), IndexOutOfBoundsError);
  CHECK(comp.read_slice(0).capacity() == 0);
  CHECK(comp.index_of(0, 10, 'x') == -1);
  CHECK(comp.index_of(10, 0, 'x') == -1);
  CHECK(comp.consolidate().capacity() == 0);
  std::array<iovec, 2> iov{};
  CHECK(comp.to_iovecs(iov) == 0);
  comp.discard_read_components();
  CHECK(comp.to_string().empty());
}

TEST_CASE("add_component appends the readable bytes and drops empty buffers") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    ByteBuf first = make(alloc, "xxhello");
    first.skip_bytes(2);
    comp.add_component(std::move(first));
    comp.add_component(alloc.buffer(16));  // nothing readable
    comp.add_component(ByteBuf());
    comp.add_component(make(alloc, " world"));
    CHECK(comp.num_components() == 2);
    CHECK(comp.readable_bytes() == 11);
    CHECK(comp.writer_index() == 11);
    CHECK(comp.component(0).to_string() == "hello");
    CHECK(comp.to_string() == "hello world");
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("integers are read across component boundaries in both byte orders") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, {0x01}));
    comp.add_component(make(alloc, {0x02, 0x03}));
    comp.add_component(make(alloc, {0x04, 0x05, 0x06, 0x07, 0x08}));
    comp.add_component(make(alloc, {0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0xff, 0xfe}));
    CHECK(comp.read_u32() == 0x01020304);
    CHECK(comp.reader_index() == 4);
    CHECK(comp.read_u16_le() == 0x0605);
    CHECK(comp.read_u8() == 0x07);
    CHECK(comp.read_u64() == 0x08090a0b0c0d0e0fULL);
    CHECK(comp.read_i16() == 0x10ff);
    CHECK(comp.read_i8() == -2);
    CHECK_FALSE(comp.is_readable());
    CHECK_THROWS_AS(comp.read_u8(), IndexOutOfBoundsError);
  }
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, {0xff, 0xff, 0xff}));
    comp.add_component(make(alloc, {0xfe, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
    CHECK(comp.read_i32() == -2);
    CHECK(comp.read_u64_le() == 1);
  }
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, {0xfe, 0xff, 0xff}));
    comp.add_component(make(alloc, {0xff, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
    CHECK(comp.read_i32_le() == -2);
    CHECK(comp.read_i64_le() == -3);
  }
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, {0xff, 0xfe}));
    comp.add_component(make(alloc, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd, 0x01}));
    CHECK(comp.read_i16_le() == -257);
    CHECK(comp.read_i64() == -3);
    CHECK(comp.read_u8() == 1);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("get reads integers at absolute indexes across components and moves nothing") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, {0x01, 0x02, 0x03}));
    comp.add_component(make(alloc, {0x04}));
    comp.add_component(make(alloc, {0x05, 0x06, 0x07, 0x08, 0x09}));
    CHECK(comp.get_u8(3) == 0x04);
    CHECK(comp.get_u16(2) == 0x0304);
    CHECK(comp.get_u32(1) == 0x02030405);
    CHECK(comp.get_u32_le(0) == 0x04030201);
    CHECK(comp.get_u64(1) == 0x0203040506070809ULL);
    CHECK(comp.get_u64_le(0) == 0x0807060504030201ULL);
    CHECK(comp.get_u16_le(7) == 0x0908);
    CHECK(comp.get_i8(0) == 1);
    CHECK(comp.get_i16(0) == 0x0102);
    CHECK(comp.get_i32(0) == 0x01020304);
    CHECK(comp.get_i64(0) == 0x0102030405060708LL);
    CHECK(comp.get_i16_le(0) == 0x0201);
    CHECK(comp.get_i32_le(0) == 0x04030201);
    CHECK(comp.get_i64_le(1) == 0x0908070605040302LL);
    CHECK(comp.reader_index() == 0);
    CHECK_THROWS_WITH_AS(comp.get_u32(6), "index 6, length 4 exceeds capacity 9",
                         IndexOutOfBoundsError);
    std::array<std::byte, 4> out{};
    comp.get_bytes(2, out);
    CHECK(std::to_integer<int>(out[0]) == 3);
    CHECK(std::to_integer<int>(out[3]) == 6);
    CHECK_THROWS_AS(comp.get_bytes(7, out), IndexOutOfBoundsError);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("read_bytes, read_string and skip_bytes cross component boundaries") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "ab"));
    comp.add_component(make(alloc, "cde"));
    comp.add_component(make(alloc, "fghi"));
    std::array<std::byte, 4> out{};
    comp.read_bytes(out);
    CHECK(std::string(reinterpret_cast<const char*>(out.data()), out.size()) == "abcd");
    comp.skip_bytes(2);
    CHECK(comp.read_string(3) == "ghi");
    CHECK_THROWS_AS(comp.read_string(1), IndexOutOfBoundsError);
    CHECK_THROWS_AS(comp.skip_bytes(1), IndexOutOfBoundsError);
    comp.set_reader_index(1);
    CHECK(comp.read_string(3) == "bcd");
    CHECK_THROWS_WITH_AS(comp.set_reader_index(10), "reader index 10 exceeds writer index 9",
                         IndexOutOfBoundsError);
    comp.set_reader_index(9);
    CHECK_FALSE(comp.is_readable());
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("read_slice shares the component's storage when inside one, else copies") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "head"));
    comp.add_component(make(alloc, "body"));
    const std::byte* body_data = comp.component(1).data();
    ByteBuf h = comp.read_slice(2);
    CHECK(h.to_string() == "he");
    CHECK(h.data() == comp.component(0).data());
    CHECK(h.ref_count() == 2);
    ByteBuf across = comp.read_slice(4);  // "adbo": spans both components
    CHECK(across.to_string() == "adbo");
    CHECK(across.ref_count() == 1);
    ByteBuf tail = comp.read_slice(2);
    CHECK(tail.to_string() == "dy");
    CHECK(tail.data() == body_data + 2);
    CHECK(comp.reader_index() == 8);
    CHECK_THROWS_AS(comp.read_slice(1), IndexOutOfBoundsError);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("index_of searches across components in both directions") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "GET /"));
    comp.add_component(make(alloc, " HTTP/1.1\r"));
    comp.add_component(make(alloc, "\nHost"));
    CHECK(comp.index_of(0, comp.writer_index(), '\n') == 15);
    CHECK(comp.index_of(0, comp.writer_index(), '\r') == 14);
    CHECK(comp.index_of(0, 100, 't') == 19);
    CHECK(comp.index_of(6, 20, 'T') == 7);
    CHECK(comp.index_of(16, 20, 'T') == -1);
    CHECK(comp.index_of(0, 5, ' ') == 3);
    CHECK(comp.index_of(0, 14, '\r') == -1);
    CHECK(comp.index_of(20, 0, ' ') == 5);  // backward: the last ' ' before 20
    CHECK(comp.index_of(5, 0, ' ') == 3);
    CHECK(comp.index_of(100, 16, 'G') == -1);
    CHECK(comp.index_of(20, 0, 'G') == 0);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("discard_read_components drops fully read components and shifts the indexes") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "aaa"));
    comp.add_component(make(alloc, "bbb"));
    comp.add_component(make(alloc, "ccc"));
    comp.skip_bytes(4);
    comp.discard_read_components();
    CHECK(comp.num_components() == 2);
    CHECK(comp.reader_index() == 1);
    CHECK(comp.writer_index() == 6);
    CHECK(comp.to_string() == "bbccc");
    CHECK(comp.get_u8(0) == 'b');
    CHECK(alloc.stats().live_buffers == 2);  // the dropped component was freed
    comp.skip_bytes(5);
    comp.discard_read_components();
    CHECK(comp.num_components() == 0);
    CHECK(comp.writer_index() == 0);
    comp.add_component(make(alloc, "new"));
    CHECK(comp.read_string(3) == "new");
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("for_each_readable visits the readable runs in order, the first one trimmed") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "one"));
    comp.add_component(make(alloc, "two"));
    comp.add_component(make(alloc, "three"));
    comp.skip_bytes(4);
    std::vector<std::string> runs;
    comp.for_each_readable([&runs](std::span<const std::byte> bytes) {
      runs.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    });
    CHECK(runs == std::vector<std::string>{"wo", "three"});
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("to_iovecs gathers the readable runs for one writev") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "HTTP/1.1 200 OK\r\n"));
    comp.add_component(make(alloc, "Content-Length: 2\r\n\r\n"));
    comp.add_component(make(alloc, "hi"));
    comp.skip_bytes(9);
    std::array<iovec, 8> iov{};
    const std::size_t n = comp.to_iovecs(iov);
    REQUIRE(n == 3);
    CHECK(iov[0].iov_len == 8);
    CHECK(iov[2].iov_len == 2);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const ssize_t written = ::writev(fds[1], iov.data(), static_cast<int>(n));
    CHECK(written == static_cast<ssize_t>(comp.readable_bytes()));
    std::string got(64, '\0');
    const ssize_t got_n = ::read(fds[0], got.data(), got.size());
    ::close(fds[0]);
    ::close(fds[1]);
    REQUIRE(got_n == written);
    got.resize(static_cast<std::size_t>(got_n));
    CHECK(got == "200 OK\r\nContent-Length: 2\r\n\r\nhi");
    comp.skip_bytes(static_cast<std::size_t>(written));
    CHECK(comp.to_iovecs(iov) == 0);

    std::array<iovec, 1> one{};
    CompositeByteBuf two(alloc);
    two.add_component(make(alloc, "a"));
    two.add_component(make(alloc, "b"));
    CHECK(two.to_iovecs(one) == 1);  // fills only what fits
    CHECK(one[0].iov_len == 1);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("consolidate copies several components into one buffer") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "xxab"));
    comp.add_component(make(alloc, "cd"));
    comp.add_component(make(alloc, "ef"));
    comp.skip_bytes(2);
    ByteBuf whole = comp.consolidate();
    CHECK(whole.to_string() == "abcdef");
    CHECK(comp.num_components() == 1);
    CHECK(comp.reader_index() == 0);
    CHECK(comp.writer_index() == 6);
    CHECK(comp.component(0).data() == whole.data());
    CHECK(comp.read_u16() == ('a' << 8 | 'b'));
    CHECK(alloc.stats().live_buffers == 1);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("consolidate of one component trims it without copying") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, "read"));
    comp.add_component(make(alloc, "rest"));
    comp.skip_bytes(5);
    const std::byte* data = comp.component(1).data();
    ByteBuf rest = comp.consolidate();
    CHECK(rest.to_string() == "est");
    CHECK(rest.readable_span().data() == data + 1);
    CHECK(comp.num_components() == 1);
    CHECK(comp.reader_index() == 0);
    CHECK(comp.readable_bytes() == 3);
    CHECK(alloc.stats().total_buffers == 2);
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("up to 8 components are stored inline; more move to the heap and keep working") {
  UnpooledByteBufAllocator alloc;
  {
    std::vector<ByteBuf> parts;
    for (int i = 0; i < 20; ++i) parts.push_back(make(alloc, {i}));
    CompositeByteBuf comp(alloc);
    {
      trellis::testing::AllocationScope scope;
      for (int i = 0; i < 8; ++i) comp.add_component(std::move(parts[static_cast<std::size_t>(i)]));
      CHECK(scope.count() == 0);
    }
    for (int i = 8; i < 20; ++i) comp.add_component(std::move(parts[static_cast<std::size_t>(i)]));
    CHECK(comp.num_components() == 20);
    CHECK(comp.get_u32(7) == 0x0708090a);
    CompositeByteBuf moved = std::move(comp);
    CHECK(comp.num_components() == 0);  // NOLINT(bugprone-use-after-move)
    for (int i = 0; i < 20; ++i) CHECK(moved.read_u8() == i);
    moved.discard_read_components();
    CHECK(moved.num_components() == 0);

    CompositeByteBuf small(alloc);
    small.add_component(make(alloc, "inline"));
    CompositeByteBuf target(alloc);
    target.add_component(make(alloc, "old"));
    target = std::move(small);
    CHECK(target.to_string() == "inline");
    CHECK(small.readable_bytes() == 0);  // NOLINT(bugprone-use-after-move)
  }
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("reads keep working after the composite is drained, refilled and rewound") {
  UnpooledByteBufAllocator alloc;
  {
    CompositeByteBuf comp(alloc);
    comp.add_component(make(alloc, {0, 0, 0, 1}));
    CHECK(comp.read_u32() == 1);
    CHECK_THROWS_AS(comp.read_u32(), IndexOutOfBoundsError);
    comp.add_component(make(alloc, {0, 0, 0, 2, 0, 0}));
    comp.add_component(make(alloc, {0, 3}));
    CHECK(comp.read_u32() == 2);
    CHECK(comp.read_u32() == 3);
    comp.set_reader_index(2);
    CHECK(comp.read_u32() == 0x00010000);
    comp.discard_read_components();
    CHECK(comp.reader_index() == 2);
    CHECK(comp.read_u16() == 2);
    CHECK(comp.read_u32() == 3);
    CHECK_FALSE(comp.is_readable());
    comp.set_reader_index(0);
    CHECK(comp.read_u64() == 0x0000000200000003ULL);
  }
  CHECK(alloc.stats().live_buffers == 0);
}
