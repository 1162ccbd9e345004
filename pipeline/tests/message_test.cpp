// Tests of Message: inline storage, type checks without RTTI, moves, errors.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/testing/allocation_counter.hpp>

using trellis::ByteBuf;
using trellis::is_copyable_message;
using trellis::Message;
using trellis::WrongTypeError;
using trellis::testing::AllocationScope;

namespace {

struct Point {
  int x;
  int y;
};

struct Big {
  char bytes[200] = {};
  int tag = 0;
};

struct Huge {
  char bytes[1000] = {};
};

// Counts live instances, to check that every value is destroyed exactly once.
struct Tracked {
  static inline int live = 0;
  explicit Tracked(int v) : value(v) { ++live; }
  Tracked(Tracked&& o) noexcept : value(o.value) { ++live; }
  Tracked& operator=(Tracked&&) = delete;
  ~Tracked() { --live; }
  int value;
};

}  // namespace

TEST_CASE("a message holding a ByteBuf is built, moved and read without allocating") {
  auto buf = ByteBuf::from("hello");
  AllocationScope scope;
  Message m = std::move(buf);
  Message moved = std::move(m);
  Message assigned;
  assigned = std::move(moved);
  CHECK(scope.count() == 0);
  CHECK(m.empty());
  CHECK(moved.empty());
  REQUIRE(assigned.is<ByteBuf>());
  CHECK(assigned.get<ByteBuf>().to_string() == "hello");
  CHECK(sizeof(Message) <= 64);
}

TEST_CASE("small structs are stored inline, big ones in a recycled box, huge ones on the heap") {
  CHECK(Message::stored_inline<Point>());
  CHECK_FALSE(Message::stored_inline<Big>());
  {
    AllocationScope scope;
    Message m = Point{1, 2};
    CHECK(scope.count() == 0);
    CHECK(m.get<Point>().y == 2);
  }
  {
    Message warm1 = Big{};
    Message warm2 = Big{};
  }  // two boxes of Big's size class are now cached on this thread
  AllocationScope scope;
  Big big;
  big.tag = 7;
  Message m = big;
  Message moved = std::move(m);  // moving a boxed value moves the pointer
  CHECK(moved.get<Big>().tag == 7);
  for (int i = 0; i < 100; ++i) {
    Message again = Big{};
    again.get<Big>().tag = i;
  }
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(scope.count() == 0);
#else
  CHECK(scope.count() == 101);  // (the cache is off under ASan)
#endif
  AllocationScope huge_scope;
  for (int i = 0; i < 3; ++i) Message h = Huge{};
  CHECK(huge_scope.count() == 3);  // too big for the box caches: one heap allocation each
}

TEST_CASE("a boxed value whose constructor throws leaves the message empty and leaks nothing") {
  // (The ASan build, where boxes come straight from the heap, reports a box not given back.)
  struct Throwing {
    explicit Throwing(int) { throw trellis::Error("no"); }
    char bytes[100];
  };
  Message m = 1;
  CHECK_THROWS_AS(m.emplace<Throwing>(1), trellis::Error);
  CHECK(m.empty());
}

TEST_CASE("is, try_get, get and take check the type") {
  Message m = 42;
  CHECK(m.is<int>());
  CHECK_FALSE(m.is<long>());
  CHECK_FALSE(m.is<Point>());
  CHECK(m.try_get<long>() == nullptr);
  REQUIRE(m.try_get<int>() != nullptr);
  CHECK(*m.try_get<int>() == 42);
  m.get<int>() = 43;
  CHECK(m.take<int>() == 43);
  CHECK(m.empty());
  CHECK_FALSE(m.is<int>());
  CHECK(m.type_name() == "empty");
}

TEST_CASE("get of the wrong type throws WrongTypeError naming both types") {
  Message m = Point{1, 2};
  try {
    (void)m.get<int>();
    FAIL("expected WrongTypeError");
  } catch (const WrongTypeError& e) {
    std::string what = e.what();
    CHECK(what.find("Point") != std::string::npos);
    CHECK(what.find("int") != std::string::npos);
  }
  CHECK_THROWS_AS((void)m.take<ByteBuf>(), WrongTypeError);
  CHECK(m.is<Point>());  // a failed take leaves the message alone
  Message empty;
  CHECK_THROWS_AS((void)empty.get<int>(), WrongTypeError);
}

TEST_CASE("type_name names the held type without RTTI") {
  CHECK(Message(1).type_name() == "int");
  CHECK(Message(Point{}).type_name().find("Point") != std::string_view::npos);
  CHECK(Message(ByteBuf{}).type_name().find("ByteBuf") != std::string_view::npos);
  CHECK(Message::name_of<double>() == "double");
}

TEST_CASE("string literals become std::string") {
  Message m = "abc";
  REQUIRE(m.is<std::string>());
  CHECK(m.get<std::string>() == "abc");
}

TEST_CASE("move-only and non-trivially-relocatable values survive moves") {
  Message m = std::make_unique<int>(5);
  Message moved = std::move(m);
  CHECK(*moved.get<std::unique_ptr<int>>() == 5);

  // libstdc++'s std::string points into itself when short: it must be moved, not memcpy'd.
  Message s = std::string("short");
  Message s2 = std::move(s);
  Message s3;
  s3 = std::move(s2);
  CHECK(s3.get<std::string>() == "short");
  s3.get<std::string>().append(" and now much longer than the small string buffer");
  CHECK(s3.take<std::string>().size() > 40);
}

TEST_CASE("every value is destroyed exactly once") {
  REQUIRE(Tracked::live == 0);
  {
    Message a = Tracked(1);
    CHECK(Tracked::live == 1);
    Message b = std::move(a);
    CHECK(Tracked::live == 1);
    a = std::move(b);
    CHECK(Tracked::live == 1);
    Tracked out = a.take<Tracked>();
    CHECK(out.value == 1);
    CHECK(Tracked::live == 1);
    a.emplace<Tracked>(2);
    CHECK(Tracked::live == 2);
    a.reset();
    CHECK(Tracked::live == 1);
    Message c = Message::make<Tracked>(3);
    Message d = Tracked(4);
    c = std::move(d);  // destroys 3
    CHECK(c.get<Tracked>().value == 4);
    CHECK(Tracked::live == 2);
  }
  CHECK(Tracked::live == 0);
}

namespace {
// Default member initialisers run under emplace_for_overwrite; only `scratch` is left as is.
struct Overwritten {
  static inline int live = 0;
  Overwritten() { ++live; }
  Overwritten(const Overwritten&) = delete;
  ~Overwritten() { --live; }
  std::string name = "default";
  int tag = 7;
  char scratch[300];  // NOLINT: deliberately not initialised
};
}  // namespace

TEST_CASE("emplace_for_overwrite default-initialises in place, boxed or inline") {
  {
    Message m = Message::make<int>(5);
    auto& big = m.emplace_for_overwrite<Overwritten>();  // boxed: larger than the inline storage
    CHECK(Overwritten::live == 1);
    CHECK(m.is<Overwritten>());
    CHECK(&m.get<Overwritten>() == &big);
    CHECK(big.name == "default");
    CHECK(big.tag == 7);
    big.scratch[0] = 'x';
    Message moved = std::move(m);
    CHECK(moved.get<Overwritten>().scratch[0] == 'x');
    CHECK(Overwritten::live == 1);
    auto& point = moved.emplace_for_overwrite<Point>();  // inline: the old value is destroyed
    CHECK(Overwritten::live == 0);
    point.x = 1;
    point.y = 2;
    CHECK(moved.get<Point>().y == 2);
    auto& huge = moved.emplace_for_overwrite<Huge>();  // beyond the box sizes: heap
    CHECK(huge.bytes[999] == 0);                       // its member initialiser ran
  }
  CHECK(Overwritten::live == 0);
}

TEST_CASE("a message releases its ByteBuf back to the allocator") {
  auto& alloc = trellis::ByteBufAllocator::default_allocator();
  const auto live = alloc.stats().live_buffers;
  {
    Message m = alloc.buffer(64);
    CHECK(alloc.stats().live_buffers == live + 1);
  }
  CHECK(alloc.stats().live_buffers == live);
}

TEST_CASE("Message::clone copies copyable values and refuses the others") {
  Message text(std::string("copy me"));
  CHECK(text.is_copyable());
  Message copy = text.clone();
  CHECK(copy.get<std::string>() == "copy me");
  CHECK(text.get<std::string>() == "copy me");

  CHECK(Message().is_copyable());
  CHECK(Message().clone().empty());

  Message unique(std::make_unique<int>(1));
  CHECK_FALSE(unique.is_copyable());
  CHECK_THROWS_AS(unique.clone(), WrongTypeError);
  Message bytes(ByteBuf::from("b"));
  CHECK_FALSE(bytes.is_copyable());  // share() or slice() it instead

  // Containers are copyable when their elements are (a vector of unique_ptr claims a copy
  // constructor that would not compile).
  Message numbers(std::vector<int>{1, 2});
  CHECK(numbers.clone().get<std::vector<int>>() == std::vector<int>{1, 2});
  Message owners(std::vector<std::unique_ptr<int>>{});
  CHECK_FALSE(owners.is_copyable());
  static_assert(!is_copyable_message<std::vector<std::vector<std::unique_ptr<int>>>>::value);
  static_assert(is_copyable_message<std::string>::value);
}
