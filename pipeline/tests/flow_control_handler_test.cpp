// Tests of FlowControlHandler behind a decoder that makes several messages of one.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/flow_control_handler.hpp>
#include <trellis/pipeline/message_to_message_decoder.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

// "a,b,c" -> "a", "b", "c"
class SplitDecoder : public MessageToMessageDecoder<std::string> {
 protected:
  void decode(ChannelHandlerContext&, std::string msg, std::vector<Message>& out) override {
    std::size_t start = 0;
    while (true) {
      auto comma = msg.find(',', start);
      out.emplace_back(msg.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
};

// Counts read_complete events that reach it.
class CompleteCounter : public ChannelInboundHandler {
 public:
  int completes = 0;
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ++completes;
    ctx.fire_channel_read_complete();
  }
};

}  // namespace

TEST_CASE("FlowControlHandler releases one message per read() with auto_read off") {
  auto flow = std::make_shared<FlowControlHandler>();
  auto counter = std::make_shared<CompleteCounter>();
  EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false}, std::make_shared<SplitDecoder>(),
                     flow, counter};
  CHECK_FALSE(ch.write_inbound(std::string("a,b,c")));  // waits for read()
  ch.read();
  CHECK(ch.read_inbound<std::string>() == "a");
  CHECK(ch.inbound_messages().empty());
  CHECK(flow->queued_messages() == 2);
  CHECK(counter->completes == 0);
  ch.read();
  CHECK(ch.read_inbound<std::string>() == "b");
  CHECK(ch.inbound_messages().empty());
  ch.read();
  CHECK(ch.read_inbound<std::string>() == "c");
  CHECK(flow->is_queue_empty());
  CHECK(counter->completes == 1);  // once, when the queue drained
  CHECK_FALSE(ch.finish());
}

TEST_CASE("FlowControlHandler is transparent with auto_read on") {
  auto flow = std::make_shared<FlowControlHandler>();
  auto counter = std::make_shared<CompleteCounter>();
  EmbeddedChannel ch{std::make_shared<SplitDecoder>(), flow, counter};
  CHECK(ch.write_inbound(std::string("a,b,c")));
  CHECK(ch.read_inbound<std::string>() == "a");
  CHECK(ch.read_inbound<std::string>() == "b");
  CHECK(ch.read_inbound<std::string>() == "c");
  CHECK(flow->is_queue_empty());
  CHECK(counter->completes == 1);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("FlowControlHandler drains its queue when auto_read is turned back on") {
  auto flow = std::make_shared<FlowControlHandler>();
  EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false}, std::make_shared<SplitDecoder>(),
                     flow};
  ch.write_inbound(std::string("a,b,c,d"));
  ch.read();
  CHECK(ch.inbound_messages().size() == 1);
  ch.config().set_auto_read(true);  // requests a read, which drains the queue
  ch.run_pending_tasks();
  CHECK(ch.inbound_messages().size() == 4);
  CHECK(flow->is_queue_empty());
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("FlowControlHandler delivers its queue when removed and drops it on close") {
  {
    auto flow = std::make_shared<FlowControlHandler>();
    EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false},
                       std::make_shared<SplitDecoder>(), flow};
    ch.write_inbound(std::string("a,b,c"));
    ch.read();
    CHECK(ch.inbound_messages().size() == 1);
    ch.pipeline().remove(*flow);
    CHECK(ch.inbound_messages().size() == 3);
    CHECK(ch.finish_and_release_all());
  }
  {
    auto flow = std::make_shared<FlowControlHandler>();
    EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false},
                       std::make_shared<SplitDecoder>(), flow};
    ch.write_inbound(std::string("a,b,c"));
    ch.read();
    ch.close();
    CHECK(flow->is_queue_empty());
    CHECK(ch.inbound_messages().size() == 1);
    CHECK(ch.finish_and_release_all());
  }
}
