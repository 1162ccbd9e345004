// The chat example's idle timeout: an IdleStateHandler that says goodbye to a connection that
// sent nothing for a while, then closes it, whether or not the goodbye can be written.
#pragma once

#include <chrono>
#include <string>

#include <trellis/pipeline.hpp>

namespace examples {

using namespace trellis;

// How long a goodbye may take to go out before the connection is closed without it.
inline constexpr std::chrono::seconds kGoodbyeTimeout{5};

// First in the pipeline: it sees every read, and writes its goodbye as bytes, so it needs no
// encoder. A timeout of zero turns it off. One per connection (not sharable).
class ChatIdleHandler final : public IdleStateHandler {
 public:
  explicit ChatIdleHandler(std::chrono::nanoseconds timeout)
      : IdleStateHandler(timeout, std::chrono::nanoseconds::zero(),
                         std::chrono::nanoseconds::zero()) {}

 protected:
  // Instead of firing the IdleStateEvent to the next handler. The close does not depend on the
  // peer: a client that reads nothing (the channel is unwritable) is closed at once, and a
  // goodbye still queued after kGoodbyeTimeout on the loop's clock is dropped by the close.
  void channel_idle(ChannelHandlerContext& ctx, IdleStateEvent event) override {
    if (!event.first) return;  // the goodbye is on its way already
    Channel& ch = ctx.channel();
    if (!ch.is_writable()) {
      ch.close();
      return;
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(reader_idle_time());
    const std::string goodbye =
        "* goodbye: nothing from you for " + std::to_string(seconds.count()) + " s\n";
    // The timer closes a channel whose goodbye is stuck; that close fails the write, whose
    // listener cancels the timer, so the timer never outlives the channel.
    ScheduledFuture<void> deadline =
        ctx.executor().schedule(kGoodbyeTimeout, [&ch] { ch.close(); });
    ChannelPromise written = ctx.new_promise();
    ctx.write_and_flush(ByteBuf::from(goodbye), written);
    written.future().add_listener([&ch, deadline](const Future<void>&) mutable {
      deadline.cancel();
      ch.close();
    });
  }
};

}  // namespace examples
