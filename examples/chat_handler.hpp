// The chat example's application handler: one ChannelGroup is the room; a newcomer is greeted,
// the others hear who joined and who left, and every line goes to everyone else. Kept apart
// from main() so tests can drive it on EmbeddedChannels (examples/tests/chat_handler_test.cpp).
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <utility>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline.hpp>

namespace examples {

using namespace trellis;

// What the chat calls a connection: its remote address, "127.0.0.1:50312".
inline std::string peer_name(const Channel& ch) {
  const auto remote = ch.remote_address();
  return remote ? remote->to_string() : "?";
}

// The lines the server sends; each ends with "\n" (the string encoder adds nothing).
inline std::string welcome_line(const std::string& name, std::size_t others) {
  return "* welcome " + name + ", " + std::to_string(others) + " other(s) here\n";
}
inline std::string joined_line(const std::string& name) { return "* " + name + " joined\n"; }
inline std::string left_line(const std::string& name) { return "* " + name + " left\n"; }
inline std::string said_line(const std::string& name, const std::string& text) {
  return "[" + name + "] " + text + "\n";
}
inline std::string too_long_line() { return "* line too long, dropped\n"; }

// A client that does not read what the room sends is disconnected once this much waits for it
// at the server: one peer that never reads must not grow the server's memory without bound.
inline constexpr std::size_t kMaxBacklogBytes = 256 * 1024;

// Sets a room (ChannelGroup) up for the chat: members above kMaxBacklogBytes are closed.
inline void limit_backlog(ChannelGroup& room) {
  room.set_unwritable_policy(ChannelGroup::UnwritablePolicy::kCloseAbove, kMaxBacklogBytes);
}

// After the line decoder and the string codec: std::string lines in, std::string lines out.
// One instance serves every connection (it is sharable); its ChannelGroup is the room.
class ChatHandler : public SimpleChannelInboundHandler<std::string> {
 public:
  ChatHandler() { limit_backlog(room_); }

  bool is_sharable() const noexcept override { return true; }

  void channel_active(ChannelHandlerContext& ctx) override {
    const std::size_t others = room_.size();
    room_.add(ctx.channel());  // it leaves the room by itself when it closes
    const std::string name = peer_name(ctx.channel());
    room_.write_and_flush(joined_line(name), channel_matchers::is_not(ctx.channel()));
    ctx.write_and_flush(welcome_line(name, others));
    ctx.fire_channel_active();
  }

  void channel_inactive(ChannelHandlerContext& ctx) override {
    room_.write_and_flush(left_line(peer_name(ctx.channel())),
                          channel_matchers::is_not(ctx.channel()));
    ctx.fire_channel_inactive();
  }

  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const codec::TooLongFrameError&) {
      ctx.write_and_flush(too_long_line());  // the decoder skipped it and goes on
    } catch (...) {
      ctx.close();  // anything else ends this connection
    }
  }

  // How many are in the room, and closing all of them at shutdown.
  std::size_t online() const { return room_.size(); }
  Future<void> close_all() { return room_.close(); }

 protected:
  void channel_read0(ChannelHandlerContext& ctx, std::string& line) override {
    if (line.empty()) return;
    room_.write_and_flush(said_line(peer_name(ctx.channel()), line),
                          channel_matchers::is_not(ctx.channel()));
  }

 private:
  ChannelGroup room_{"chat"};
};

}  // namespace examples
