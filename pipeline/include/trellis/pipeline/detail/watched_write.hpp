// watch_write: gives a write a promise of the channel's loop so that a handler (idle detection,
// write timeouts) learns when the write completes, even when the writer passed no promise
// (Netty's unvoid()); the writer's own promise is completed the same way afterwards.
#pragma once

#include <exception>
#include <utility>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/future.hpp>

namespace trellis::detail {

inline bool is_closed_channel_error(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const ClosedChannelError&) {
    return true;
  } catch (...) {
    return false;
  }
}

// Returns the promise to pass on with the write. on_done(const Future<void>&) runs on the
// channel's loop when the write completes, then `original` is completed with the same outcome.
// A write without a promise keeps its meaning: a failure is fired into the pipeline as
// exception_caught, except ClosedChannelError (the channel closing fails every queued write; a
// write without a promise is not told about that, as without this handler).
template <class Fn>
ChannelPromise watch_write(ChannelHandlerContext& ctx, ChannelPromise original, Fn&& on_done) {
  ChannelPromise inner = ctx.new_promise();
  ChannelPipeline* pipeline = &ctx.pipeline();
  inner.future().add_listener([original = std::move(original), pipeline,
                               fn = std::forward<Fn>(on_done)](const Future<void>& f) mutable {
    fn(f);
    if (f.is_success()) {
      original.try_set_value();
    } else if (!original.is_void()) {
      original.try_set_exception(f.cause());
    } else if (!is_closed_channel_error(f.cause())) {
      pipeline->fire_exception_caught(f.cause());
    }
  });
  return inner;
}

}  // namespace trellis::detail
