// The chat example's pipeline (examples/chat_initializer.hpp, chat_handler.hpp,
// chat_idle_handler.hpp) on EmbeddedChannels: lines and strings, greetings, broadcasts between
// two channels in one room, a client that never reads, and the idle timeout on virtual time. The
// code blocks of the "Testing it" section of docs/tutorial.md are this file's code.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

#include "chat_handler.hpp"
#include "chat_initializer.hpp"

using namespace trellis;
using namespace std::chrono_literals;
using examples::ChatHandler;
using examples::ChatInitializer;
using trellis::testing::read_outbound_string;

namespace {

// A connection of the chat: the pipeline of ChatInitializer on an EmbeddedChannel whose remote
// address is `peer:4000`, registered (the chat handler sees channel_active), on a frozen clock.
std::shared_ptr<EmbeddedChannel> client(const std::shared_ptr<ChatInitializer>& init,
                                        const std::string& peer) {
  auto ch = EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false}, init);
  ch->freeze_time();  // before the idle handler arms its timer
  ch->connect(SocketAddress::from_ip(peer, 4000));
  ch->register_channel();
  return ch;
}

}  // namespace

TEST_CASE("chat: the codec splits lines and decodes them, and strings go out as bytes") {
  testing::BufferLeakCheck leaks;
  {
    // No chat handler: what the pipeline makes of the bytes reaches the tail.
    auto ch = client(std::make_shared<ChatInitializer>(0s, nullptr), "10.0.0.1");
    CHECK_FALSE(ch->write_inbound(ByteBuf::from("hel")));  // no line yet
    CHECK(ch->write_inbound(ByteBuf::from("lo\r\nworld\n\nlast")));
    CHECK(ch->read_inbound<std::string>() == "hello");
    CHECK(ch->read_inbound<std::string>() == "world");
    CHECK(ch->read_inbound<std::string>() == "");
    TRELLIS_CHECK_NO_MORE_INBOUND(*ch);
    CHECK(ch->write_outbound(std::string("hi\n")));
    TRELLIS_CHECK_OUTBOUND_STRING(*ch, "hi\n");
    CHECK_FALSE(ch->finish());
  }
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}

TEST_CASE("chat: a line longer than the limit is dropped and the client told") {
  auto chat = std::make_shared<ChatHandler>();
  auto ch = client(std::make_shared<ChatInitializer>(0s, chat), "10.0.0.1");
  CHECK(read_outbound_string(*ch) == "* welcome 10.0.0.1:4000, 0 other(s) here\n");
  ch->write_inbound(ByteBuf::from(std::string(examples::kMaxLineLength + 1, 'x') + "\n"));
  CHECK(read_outbound_string(*ch) == "* line too long, dropped\n");
  CHECK(ch->is_open());
  CHECK(ch->exceptions().empty());
}

TEST_CASE("chat: greetings, broadcasts to the others, and leaving") {
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(0s, chat);
  auto alice = client(init, "10.0.0.1");
  CHECK(read_outbound_string(*alice) == "* welcome 10.0.0.1:4000, 0 other(s) here\n");
  auto bob = client(init, "10.0.0.2");
  CHECK(read_outbound_string(*bob) == "* welcome 10.0.0.2:4000, 1 other(s) here\n");
  CHECK(read_outbound_string(*alice) == "* 10.0.0.2:4000 joined\n");
  CHECK(chat->online() == 2);

  alice->write_inbound(ByteBuf::from("hello bob\n"));
  CHECK(read_outbound_string(*bob) == "[10.0.0.1:4000] hello bob\n");
  CHECK_FALSE(alice->read_outbound());              // not back to the sender
  bob->write_inbound(ByteBuf::from("hi\r\n\r\n"));  // the empty line is not sent
  CHECK(read_outbound_string(*alice) == "[10.0.0.2:4000] hi\n");
  CHECK_FALSE(alice->read_outbound());

  bob->close();
  CHECK(read_outbound_string(*alice) == "* 10.0.0.2:4000 left\n");
  CHECK(chat->online() == 1);
  CHECK_FALSE(alice->finish());
}

TEST_CASE("chat: a silent client gets a goodbye and is closed after the idle time, not before") {
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(30s, chat);
  auto alice = client(init, "10.0.0.1");
  auto bob = client(init, "10.0.0.2");
  read_outbound_string(*alice);  // welcome
  read_outbound_string(*alice);  // bob joined
  read_outbound_string(*bob);    // welcome

  // Each EmbeddedChannel has its own clock. Alice speaks at 20 s on hers; bob hears it, which
  // does not make him any less silent.
  alice->advance_by(20s);
  alice->write_inbound(ByteBuf::from("still here\n"));
  CHECK(read_outbound_string(*bob) == "[10.0.0.1:4000] still here\n");
  bob->advance_by(30s - 1ns);
  CHECK(bob->is_open());  // not 1 ns early
  CHECK_FALSE(bob->read_outbound());
  bob->advance_by(1ns);
  CHECK(read_outbound_string(*bob) == "* goodbye: nothing from you for 30 s\n");
  CHECK_FALSE(bob->is_open());
  CHECK(read_outbound_string(*alice) == "* 10.0.0.2:4000 left\n");

  alice->advance_by(30s - 1ns);  // 30 s after her line, less 1 ns
  CHECK(alice->is_open());
  alice->advance_by(1ns);
  CHECK(read_outbound_string(*alice) == "* goodbye: nothing from you for 30 s\n");
  CHECK_FALSE(alice->is_open());
  CHECK(chat->online() == 0);
}

TEST_CASE("chat: a client that never reads is closed once its backlog passes the bound") {
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(0s, chat);
  auto alice = client(init, "10.0.0.1");
  auto bob = client(init, "10.0.0.2");
  auto carol = client(init, "10.0.0.3");
  read_outbound_string(*alice);      // welcome
  read_outbound_string(*alice);      // bob joined
  read_outbound_string(*alice);      // carol joined
  read_outbound_string(*bob);        // welcome
  read_outbound_string(*bob);        // carol joined
  read_outbound_string(*carol);      // welcome
  bob->set_outbound_byte_budget(0);  // bob reads nothing from now on

  const std::string text(1000, 'x');
  const std::string line = "[10.0.0.1:4000] " + text + "\n";
  constexpr int kLines = 400;  // 400 KB: well past the bound
  std::size_t most_queued = 0;
  int heard = 0;
  for (int i = 0; i < kLines; ++i) {
    alice->write_inbound(ByteBuf::from(text + "\n"));
    if (bob->is_open()) {
      most_queued =
          std::max(most_queued, bob->unsafe().outbound_buffer()->total_pending_write_bytes());
    }
    if (read_outbound_string(*carol) == line) ++heard;
  }
  CHECK(heard == kLines);  // the others hear every line
  CHECK_FALSE(bob->is_open());
  CHECK(most_queued <= examples::kMaxBacklogBytes);
  bob->run_pending_tasks();  // bob's own loop fires the close's channel_inactive
  CHECK(read_outbound_string(*carol) == "* 10.0.0.2:4000 left\n");
  CHECK(chat->online() == 2);
}

TEST_CASE("chat: a silent client that reads nothing either is closed at once when idle") {
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(30s, chat);
  auto bob = client(init, "10.0.0.2");
  read_outbound_string(*bob);  // welcome
  bob->set_writable(false);    // its peer stopped reading: no goodbye can go out
  bob->advance_by(30s);
  CHECK_FALSE(bob->is_open());
  CHECK(chat->online() == 0);
}

TEST_CASE("chat: an idle client whose goodbye is stuck is closed after the goodbye timeout") {
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(30s, chat);
  auto bob = client(init, "10.0.0.2");
  read_outbound_string(*bob);        // welcome
  bob->set_outbound_byte_budget(0);  // writable, but the goodbye does not go out
  bob->advance_by(30s);
  CHECK(bob->is_open());  // the goodbye has its chance
  bob->advance_by(examples::kGoodbyeTimeout - 1ns);
  CHECK(bob->is_open());
  bob->advance_by(1ns);
  CHECK_FALSE(bob->is_open());
  CHECK_FALSE(bob->read_outbound());  // the goodbye never went out
  CHECK(chat->online() == 0);
}
