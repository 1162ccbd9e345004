// FlowControlHandler behind LineBasedFrameDecoder: with auto_read off, three lines that arrive in
// one buffer come out one per read().
#include <doctest/doctest.h>

#include <memory>

#include <trellis/codec/line_based_frame_decoder.hpp>
#include <trellis/pipeline/flow_control_handler.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

TEST_CASE("three lines in one buffer: each read() releases exactly one line") {
  testing::BufferLeakCheck leaks;
  {
    auto flow = std::make_shared<FlowControlHandler>();
    EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false},
                       std::make_shared<codec::LineBasedFrameDecoder>(1024), flow};
    CHECK_FALSE(ch.write_inbound(ByteBuf::from("one\ntwo\nthree\n")));
    CHECK(ch.pending_inbound_messages().size() == 1);
    for (const char* line : {"one", "two", "three"}) {
      ch.read();
      CHECK(testing::read_inbound_string(ch) == line);
      CHECK(ch.inbound_messages().empty());
    }
    CHECK(flow->is_queue_empty());
    ch.read();  // nothing left: the read waits for more input
    CHECK(ch.inbound_messages().empty());
    CHECK_FALSE(ch.finish());
  }
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}

TEST_CASE("without FlowControlHandler one read() releases all three lines") {
  EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false},
                     std::make_shared<codec::LineBasedFrameDecoder>(1024)};
  ch.write_inbound(ByteBuf::from("one\ntwo\nthree\n"));
  ch.read();
  CHECK(ch.inbound_messages().size() == 3);
  CHECK(ch.finish_and_release_all());
}
