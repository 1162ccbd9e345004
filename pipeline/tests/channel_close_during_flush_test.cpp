#include <doctest/doctest.h>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

using namespace trellis;

TEST_CASE("a write listener that closes the channel while the flush drains it is safe") {
  EmbeddedChannel ch;
  auto first = ch.new_promise();
  auto second = ch.new_promise();
  first.future().add_listener([&ch](const Future<void>&) { ch.close(); });
  ch.write(Message(ByteBuf::from("one")), first);
  ch.write(Message(ByteBuf::from("two")), second);
  ch.flush();  // completing "one" closes the channel in the middle of the flush
  CHECK(first.is_success());
  CHECK(second.is_done());
  CHECK_FALSE(second.is_success());  // failed with ClosedChannelError by the close
  CHECK_FALSE(ch.is_open());
  ch.finish_and_release_all();
}
