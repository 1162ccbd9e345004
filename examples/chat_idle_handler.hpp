// The chat example's idle timeout: an IdleStateHandler that says goodbye to a connection that
// sent nothing for a while, then closes it.
#pragma once

#include <chrono>
#include <string>

#include <trellis/pipeline.hpp>

namespace examples {

using namespace trellis;

// First in the pipeline: it sees every read, and writes its goodbye as bytes, so it needs no
// encoder. A timeout of zero turns it off. One per connection (not sharable).
class ChatIdleHandler final : public IdleStateHandler {
 public:
  explicit ChatIdleHandler(std::chrono::nanoseconds timeout)
      : IdleStateHandler(timeout, std::chrono::nanoseconds::zero(),
                         std::chrono::nanoseconds::zero()) {}

 protected:
  // Instead of firing the IdleStateEvent to the next handler.
  void channel_idle(ChannelHandlerContext& ctx, IdleStateEvent event) override {
    if (!event.first) return;  // the goodbye is on its way already
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(reader_idle_time());
    const std::string goodbye =
        "* goodbye: nothing from you for " + std::to_string(seconds.count()) + " s\n";
    ChannelPromise written = ctx.new_promise();
    ctx.write_and_flush(ByteBuf::from(goodbye), written);
    written.future().add_listener([&ch = ctx.channel()](const Future<void>&) { ch.close(); });
  }
};

}  // namespace examples
