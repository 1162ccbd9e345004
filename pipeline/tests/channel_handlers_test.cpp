// Tests of the handler helpers: SimpleChannelInboundHandler, ChannelInitializer and the
// message-to-message decoder and encoder.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <trellis/pipeline/channel_initializer.hpp>
#include <trellis/pipeline/message_to_message_decoder.hpp>
#include <trellis/pipeline/message_to_message_encoder.hpp>
#include <trellis/pipeline/simple_channel_inbound_handler.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

class IntSink : public SimpleChannelInboundHandler<int> {
 public:
  std::vector<int> got;

 protected:
  void channel_read0(ChannelHandlerContext&, int& msg) override { got.push_back(msg); }
};

// "a,b,c" -> "a", "b", "c"
class SplitDecoder : public MessageToMessageDecoder<std::string> {
 protected:
  void decode(ChannelHandlerContext&, std::string msg, std::vector<Message>& out) override {
    std::size_t start = 0;
    while (true) {
      auto comma = msg.find(',', start);
      if (msg.substr(start, comma - start) == "bad") throw std::runtime_error("bad part");
      out.emplace_back(msg.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
};

// int n -> n copies of ByteBuf "n"
class RepeatEncoder : public MessageToMessageEncoder<int> {
 protected:
  void encode(ChannelHandlerContext&, int n, std::vector<Message>& out) override {
    for (int i = 0; i < n; ++i) out.emplace_back(ByteBuf::from(std::to_string(n)));
  }
};

}  // namespace

TEST_CASE("SimpleChannelInboundHandler takes its type and passes the others on") {
  auto sink = std::make_shared<IntSink>();
  EmbeddedChannel ch{sink};
  CHECK(ch.write_inbound(1, std::string("two"), 3));
  CHECK(sink->got == std::vector<int>{1, 3});
  CHECK(ch.read_inbound<std::string>() == "two");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("ChannelInitializer sets the pipeline up on registration and removes itself") {
  auto sink = std::make_shared<IntSink>();
  int calls = 0;
  auto init = ChannelInitializer::from([&](Channel& c) {
    ++calls;
    c.pipeline().add_last("sink", sink);
  });
  EmbeddedChannel ch{init};
  CHECK(calls == 1);
  CHECK(ch.pipeline().names() == std::vector<std::string>{"sink"});
  ch.write_inbound(5);
  CHECK(sink->got == std::vector<int>{5});

  // Sharable: the same initializer sets up a second channel, here added after registration.
  EmbeddedChannel other;
  other.pipeline().add_last("init", ChannelInitializer::from([&](Channel& c) {
                              ++calls;
                              c.pipeline().add_last(std::make_shared<IntSink>());
                            }));
  CHECK(calls == 2);
  CHECK(other.pipeline().size() == 1);
  CHECK(other.pipeline().get("init") == nullptr);
}

TEST_CASE("a ChannelInitializer that throws closes the channel") {
  EmbeddedChannel ch{ChannelInitializer::from([](Channel&) { throw std::runtime_error("x"); })};
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("MessageToMessageDecoder turns one message into several and passes others on") {
  EmbeddedChannel ch{std::make_shared<SplitDecoder>()};
  CHECK(ch.write_inbound(std::string("a,b,c"), 42));
  CHECK(ch.read_inbound<std::string>() == "a");
  CHECK(ch.read_inbound<std::string>() == "b");
  CHECK(ch.read_inbound<std::string>() == "c");
  CHECK(ch.read_inbound<int>() == 42);
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);

  // What was decoded before a failure still goes on, then the error.
  CHECK_THROWS_WITH(ch.write_inbound(std::string("x,bad")), "bad part");
  CHECK(ch.read_inbound<std::string>() == "x");

  // Steady state: the output lists come from a pool.
  for (int i = 0; i < 4; ++i) ch.pipeline().fire_channel_read(std::string("p,q"));
  ch.inbound_messages().clear();
  trellis::testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) {
    ch.pipeline().fire_channel_read(std::string("p,q"));
    ch.inbound_messages().clear();
  }
  CHECK(scope.count() == 0);
}

TEST_CASE(
    "MessageToMessageEncoder encodes its type and completes the promise with the last "
    "part") {
  trellis::testing::BufferLeakCheck leaks;
  {
    EmbeddedChannel ch{std::make_shared<RepeatEncoder>()};
    auto p = ch.new_promise();
    ch.write_and_flush(3, p);
    CHECK(p.is_success());
    CHECK(ch.outbound_messages().size() == 3);
    TRELLIS_CHECK_OUTBOUND_STRING(ch, "3");
    auto zero = ch.new_promise();
    ch.write_and_flush(0, zero);
    CHECK(zero.is_success());
    ch.write_outbound(std::string("other"));
    TRELLIS_CHECK_OUTBOUND_STRING(ch, "3");
    TRELLIS_CHECK_OUTBOUND_STRING(ch, "3");
    CHECK(ch.read_outbound<std::string>() == "other");
    CHECK_FALSE(ch.finish());
  }
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}
