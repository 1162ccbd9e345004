// The registration step shared by the socket channels: on the channel's loop, run the caller's
// set-up, register the channel, and report the outcome in a future (closing on failure).
#pragma once

#include <memory>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/transport/event_loop.hpp>

namespace trellis::detail {

template <class C>
Future<void> register_on_loop(EventLoop& loop, std::shared_ptr<C> self,
                              UniqueFunction<void(C&)> before) {
  Promise<void> done(&loop);
  loop.execute([self = std::move(self), done, before = std::move(before)]() mutable {
    try {
      if (before) before(*self);
      self->unsafe().register_channel();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
      self->unsafe().close(ChannelPromise{});
    }
  });
  return done.future();
}

}  // namespace trellis::detail
