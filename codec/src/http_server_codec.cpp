// HttpServerCodec: the discipline of one HTTP/1.1 server connection (see http_server_codec.hpp):
// response order, the end of input, request read timeouts, back-pressure, the lingering close.
#include <trellis/codec/http/http_server_codec.hpp>

#include <algorithm>
#include <string>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis::http {

namespace {

std::int64_t nanos_of(std::chrono::nanoseconds d) noexcept {
  return std::max<std::int64_t>(0, d.count());
}

// Responses written while the codec decodes one inbound buffer share one clock reading (Date).
class ReadBatch {
 public:
  explicit ReadBatch(HttpResponseEncoder& encoder) : encoder_(encoder) {
    encoder_.begin_read_batch();
  }
  ~ReadBatch() { encoder_.end_read_batch(); }
  ReadBatch(const ReadBatch&) = delete;
  ReadBatch& operator=(const ReadBatch&) = delete;

 private:
  HttpResponseEncoder& encoder_;
};

// Marks the codec as driving its decoder (a read, the end of input, a writability change): a
// response written meanwhile must not resume decoding from inside, where the requests it
// decoded would overtake those being passed on.
class Driving {
 public:
  explicit Driving(int& depth) : depth_(depth) { ++depth_; }
  ~Driving() { --depth_; }
  Driving(const Driving&) = delete;
  Driving& operator=(const Driving&) = delete;

 private:
  int& depth_;
};

}  // namespace

HttpServerCodec::HttpServerCodec(HttpParserLimits limits,
                                 HttpResponseEncoder::Options encoder_options,
                                 HttpRequestDecoderOptions decoder_options,
                                 HttpServerTimeouts timeouts)
    : decoder_(limits, decoder_options), encoder_(encoder_options), timeouts_(timeouts) {
  decoder_.codec_ = this;
  for (const auto t : {timeouts_.header_timeout, timeouts_.body_timeout, timeouts_.idle_timeout,
                       timeouts_.send_timeout}) {
    const std::int64_t n = nanos_of(t);
    if (n > 0 && (min_timeout_ == 0 || n < min_timeout_)) min_timeout_ = n;
  }
}

HttpServerCodec::~HttpServerCodec() = default;

// --- life cycle ---------------------------------------------------------------------------

void HttpServerCodec::handler_added(ChannelHandlerContext& ctx) {
  if (!ctx.channel().is_active()) return;
  idle_since_ = ctx.executor().coarse_time_nanos();
  if (min_timeout_ > 0) arm_timer(ctx, idle_since_ + min_timeout_);
}

void HttpServerCodec::channel_active(ChannelHandlerContext& ctx) {
  idle_since_ = ctx.executor().coarse_time_nanos();
  if (min_timeout_ > 0) arm_timer(ctx, idle_since_ + min_timeout_);
  ctx.fire_channel_active();
}

void HttpServerCodec::handler_removed(ChannelHandlerContext& ctx) {
  cancel_timer();
  fail_held_interim();
  encoder_.handler_removed(ctx);
  decoder_.handler_removed(ctx);
}

void HttpServerCodec::channel_inactive(ChannelHandlerContext& ctx) {
  cancel_timer();
  fail_held_interim();
  if (lingering_) {
    lingering_ = false;
    close_promise_.try_set_value();  // the peer closed first: the close is done
  }
  Driving driving(driving_);
  decoder_.channel_inactive(ctx);
}

// --- inbound ------------------------------------------------------------------------------

void HttpServerCodec::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (lingering_) {
    // Read only to be discarded, so the peer reads our response rather than a reset.
    if (const auto* bytes = msg.try_get<ByteBuf>()) linger_bytes_ += bytes->readable_bytes();
    if (linger_bytes_ >= timeouts_.linger_max_bytes) finish_lingering(ctx);
    return;
  }
  read_in_batch_ = true;
  ReadBatch batch(encoder_);
  {
    Driving driving(driving_);
    decoder_.read_message(ctx, msg);
  }
  // Held back at max_unanswered_requests and answered meanwhile: go on from here.
  if (decoder_.is_paused()) [[unlikely]]
    decoder_.resume(ctx);
}

void HttpServerCodec::channel_read_complete(ChannelHandlerContext& ctx) {
  if (lingering_) {
    if (!ctx.channel().config().auto_read()) ctx.read();
    return;
  }
  decoder_.channel_read_complete(ctx);
  if (read_in_batch_) {
    read_in_batch_ = false;
    stamp(ctx);
  }
}

void HttpServerCodec::stamp(ChannelHandlerContext& ctx) {
  // One clock reading per read batch: each deadline then counts from the end of the batch that
  // started its wait, which can only make it later than the bytes' arrival, never earlier.
  const std::int64_t now = ctx.executor().coarse_time_nanos();
  if (decoder_.in_body()) body_read_at_ = now;
  if (decoder_.in_head() && head_since_ < 0) head_since_ = now;
  if (idle_since_ < 0 && unanswered_ == 0 && !streaming_ && !decoder_.in_request()) {
    idle_since_ = now;
  }
}

void HttpServerCodec::channel_writability_changed(ChannelHandlerContext& ctx) {
  const std::int64_t now = ctx.executor().coarse_time_nanos();
  Driving driving(driving_);
  if (!ctx.channel().is_writable()) {
    if (unwritable_since_ < 0) unwritable_since_ = now;
    decoder_.channel_writability_changed(ctx);
    return;
  }
  if (unwritable_since_ >= 0) {
    unwritable_since_ = -1;
    output_stalled_since_ = -1;  // the client read: the output moved
    restart_read_waits(now);
    if (min_timeout_ > 0) arm_timer(ctx, now + min_timeout_);
  }
  {
    ReadBatch batch(encoder_);
    decoder_.channel_writability_changed(ctx);  // resumes the requests it held back
  }
  stamp(ctx);
}

void HttpServerCodec::restart_read_waits(std::int64_t now) noexcept {
  // The client was not at fault while we waited for it to read: its read waits count anew.
  if (head_since_ >= 0) head_since_ = now;
  if (body_read_at_ >= 0) body_read_at_ = now;
  if (idle_since_ >= 0) idle_since_ = now;
}

void HttpServerCodec::user_event_triggered(ChannelHandlerContext& ctx, Message event) {
  if (lingering_ && event.is<ChannelInputShutdownEvent>()) {
    finish_lingering(ctx);
    ctx.fire_user_event_triggered(std::move(event));
    return;
  }
  Driving driving(driving_);
  decoder_.user_event_triggered(ctx, std::move(event));
}

void HttpServerCodec::on_request_decoded(HttpMethod::Id method) {
  encoder_.on_request_method(method);
  ++unanswered_;
  head_since_ = -1;
  idle_since_ = -1;
}

void HttpServerCodec::on_request_dropped() noexcept {
  if (unanswered_ > 0) --unanswered_;
}

void HttpServerCodec::on_decode_error(ChannelHandlerContext& ctx, std::uint16_t status) {
  end_with(ctx, status);
}

// --- outbound -----------------------------------------------------------------------------

bool HttpServerCodec::ends_response(const Message& msg) noexcept {
  if (const auto* full = msg.try_get<FullHttpResponse>()) {
    if (full->status.code < 200) return false;
    if (full->headers.contains_token(HeaderId::kConnection, "close")) [[unlikely]] {
      close_after_response_ = true;
    }
    return true;
  }
  if (const auto* head = msg.try_get<HttpResponse>()) {
    if (head->status.code >= 200) {
      streaming_ = true;
      if (head->headers.contains_token(HeaderId::kConnection, "close")) [[unlikely]] {
        close_after_response_ = true;
      }
    } else {
      interim_ = true;  // its (empty) LastHttpContent ends nothing
    }
    return false;
  }
  if (msg.is<LastHttpContent>()) {
    if (interim_) {
      interim_ = false;
      return false;
    }
    if (streaming_) {
      streaming_ = false;
      return true;
    }
  }
  return false;
}

bool HttpServerCodec::holds_interim(const Message& msg) const noexcept {
  if (holding_interim_) return true;
  if (unanswered_ <= 1) return false;
  if (const auto* head = msg.try_get<HttpResponse>()) return head->status.code < 200;
  if (const auto* full = msg.try_get<FullHttpResponse>()) return full->status.code < 200;
  return false;
}

void HttpServerCodec::release_interim(ChannelHandlerContext& ctx) {
  auto held = std::move(held_interim_);
  held_interim_.clear();
  for (auto& [msg, promise] : held) write(ctx, std::move(msg), std::move(promise));
}

void HttpServerCodec::fail_held_interim() noexcept {
  holding_interim_ = false;
  for (auto& held : held_interim_) held.second.try_set_exception(ClosedChannelError());
  held_interim_.clear();
}

void HttpServerCodec::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  if (const auto* refusal = msg.try_get<HttpRefusal>()) [[unlikely]] {
    refuse(ctx, refusal->status, std::move(promise));
    return;
  }
  if (holds_interim(msg)) [[unlikely]] {
    if (msg.is<HttpResponse>()) holding_interim_ = true;
    if (msg.is<LastHttpContent>()) holding_interim_ = false;
    held_interim_.emplace_back(std::move(msg), std::move(promise));
    return;
  }
  const bool ends = ends_response(msg);
  if (close_after_response_ && decoder_.input_ == HttpRequestDecoder::Input::kOpen) [[unlikely]] {
    // A response that closes the connection (RFC 9112 §9.6): no request after it is processed,
    // not even one already decoded, and nothing more is read.
    decoder_.stop_taking_requests(ctx);
  }
  if (!ends) {
    encoder_.write_message(ctx, msg, promise);
    return;
  }
  if (unanswered_ > 0) --unanswered_;
  const bool last = close_after_response_ || (unanswered_ == 0 && decoder_.stop_after_message_);
  close_after_response_ = false;
  if (last && final_status_ == 0) {
    // The answer to a request that ends the connection, or an answer that ends it (RFC 9112
    // §9.6): close once written.
    if (promise.is_void()) promise = ctx.new_promise();
    auto written = promise.future();
    encoder_.write_message(ctx, msg, promise);
    written.add_listener([this, &ctx](const Future<void>&) { close_connection(ctx, {}); });
    return;
  }
  encoder_.write_message(ctx, msg, promise);
  if (!held_interim_.empty() && unanswered_ <= 1 && !holding_interim_) release_interim(ctx);
  if (final_status_ != 0) {
    write_final_response(ctx);
  } else if (unanswered_ == 0 && !streaming_) {
    // Idle from now, or (answered within a read batch) from the batch's end.
    idle_since_ = read_in_batch_ ? -1 : ctx.executor().coarse_time_nanos();
  }
  // Requests held back at max_unanswered_requests: one may go on now (from inside a read, once
  // the read has been passed on).
  if (decoder_.is_paused() && driving_ == 0) [[unlikely]]
    decoder_.resume(ctx);
}

void HttpServerCodec::refuse(ChannelHandlerContext& ctx, std::uint16_t status,
                             ChannelPromise promise) {
  if (!promise.is_void()) {
    ctx.channel().close_future().add_listener(
        [promise](const Future<void>&) mutable { promise.try_set_value(); });
  }
  if (closing_ || final_status_ != 0) return;  // the connection ends already
  refused_ = true;
  // The requests decoded after the refused one (in the same read) are not passed on: nothing
  // after a request that ends the connection is processed, and none of them will be answered.
  decoder_.drop_undelivered();
  end_with(ctx, status);
}

void HttpServerCodec::end_with(ChannelHandlerContext& ctx, std::uint16_t status) {
  if (closing_ || final_status_ != 0) return;
  final_status_ = status;
  decoder_.stop(ctx);
  write_final_response(ctx);
}

void HttpServerCodec::write_final_response(ChannelHandlerContext& ctx) {
  if (closing_) return;
  // The request being read (if its head was decoded), or the refused one, is the one this
  // response answers; every request before it must have had its response first.
  const std::size_t current = (refused_ || decoder_.request_counted_) ? 1 : 0;
  if (unanswered_ > current || streaming_) return;  // later, from write()
  closing_ = true;
  if (unanswered_ < current) {
    close_connection(ctx, {});  // the request in progress was answered already
    return;
  }
  unanswered_ = 0;
  FullHttpResponse response = HttpRefusal{final_status_}.response();
  auto written = ctx.new_promise();
  encoder_.write(ctx, Message(std::move(response)), written);
  encoder_.flush(ctx);
  written.future().add_listener([this, &ctx](const Future<void>&) { close_connection(ctx, {}); });
}

void HttpServerCodec::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  close_connection(ctx, std::move(promise));
}

bool HttpServerCodec::more_input_may_come() const noexcept {
  return decoder_.input_ == HttpRequestDecoder::Input::kFailed || decoder_.discarded_ > 0 ||
         decoder_.in_request();
}

void HttpServerCodec::close_connection(ChannelHandlerContext& ctx, ChannelPromise promise) {
  if (lingering_) {
    if (!promise.is_void()) {
      ctx.channel().close_future().add_listener(
          [promise](const Future<void>&) mutable { promise.try_set_value(); });
    }
    return;
  }
  closing_ = true;
  encoder_.write_held(ctx);  // then fails as any unflushed write does
  Channel& channel = ctx.channel();
  if (timeouts_.linger_timeout.count() <= 0 || timeouts_.linger_max_bytes == 0 ||
      !channel.is_active() || channel.is_output_shutdown() || !more_input_may_come()) {
    ctx.close(std::move(promise));
    return;
  }
  // nginx's lingering close: the response is out; a FIN tells the client so, and what it still
  // sends is read and dropped (for a bounded time and size) instead of being answered by a
  // reset, which would destroy the response in the client's receive buffer.
  lingering_ = true;
  close_promise_ = std::move(promise);
  channel.shutdown_output().add_listener([this, &ctx](const Future<void>& done) {
    if (!lingering_) return;  // closed meanwhile
    if (!done.is_success()) {
      finish_lingering(ctx);  // this channel cannot half-close: close now
      return;
    }
    start_lingering(ctx);
  });
}

void HttpServerCodec::start_lingering(ChannelHandlerContext& ctx) {
  if (!ctx.channel().is_active()) {
    finish_lingering(ctx);
    return;
  }
  linger_until_ = ctx.executor().coarse_time_nanos() + nanos_of(timeouts_.linger_timeout);
  arm_timer(ctx, linger_until_);
  decoder_.set_input_held(false);
  auto& config = ctx.channel().config();
  if (config.auto_read()) {
    ctx.read();
  } else {
    config.set_auto_read(true);  // the connection only drains from here on
  }
}

void HttpServerCodec::finish_lingering(ChannelHandlerContext& ctx) {
  lingering_ = false;
  ctx.close(std::move(close_promise_));
}

// --- the timer ----------------------------------------------------------------------------

void HttpServerCodec::observe_output(ChannelHandlerContext& ctx, std::int64_t now) {
  // Flushed responses the transport could not write yet: the client has not read the ones
  // before them. Looked at only here, once per tick, so the hot path pays nothing for it.
  const ChannelOutboundBuffer* out = ctx.channel().unsafe().outbound_buffer();
  const std::size_t pending =
      out != nullptr && !out->is_empty() ? out->total_pending_write_bytes() : 0;
  if (pending == 0) {
    if (output_stalled_since_ >= 0) {
      output_stalled_since_ = -1;
      restart_read_waits(now);
    }
    return;
  }
  // First seen now, or it moved since the last tick: stalled from now (never earlier than it
  // really stalled, up to one tick later).
  if (output_stalled_since_ < 0 || pending != output_sample_) output_stalled_since_ = now;
  output_sample_ = pending;
}

HttpServerCodec::Wait HttpServerCodec::waiting_for() const noexcept {
  if (lingering_) return Wait::kLinger;
  if (unwritable_since_ >= 0) return Wait::kSend;
  // Responses wait for the client to read them: the server holds back, not the client, so no
  // read deadline runs (an incomplete request's 408 waits, and so does the close after one).
  if (output_stalled_since_ >= 0) return Wait::kUnread;
  if (closing_ || decoder_.is_input_stopped() || decoder_.is_paused()) return Wait::kNothing;
  if (decoder_.in_body()) return Wait::kBody;
  if (decoder_.in_head()) return Wait::kHead;
  if (unanswered_ == 0 && !streaming_) return Wait::kIdle;
  return Wait::kNothing;  // the application is answering: not a wait on the client
}

std::int64_t HttpServerCodec::deadline_of(Wait wait) const noexcept {
  auto after = [](std::int64_t since, std::chrono::nanoseconds timeout) -> std::int64_t {
    if (since < 0 || timeout.count() <= 0) return -1;
    return since + timeout.count();
  };
  switch (wait) {
    case Wait::kIdle:
      return after(idle_since_, timeouts_.idle_timeout);
    case Wait::kHead:
      return after(head_since_, timeouts_.header_timeout);
    case Wait::kBody:
      return after(body_read_at_, timeouts_.body_timeout);
    case Wait::kSend:
      return after(unwritable_since_, timeouts_.send_timeout);
    case Wait::kUnread:
      return after(output_stalled_since_, timeouts_.send_timeout);
    case Wait::kLinger:
      return linger_until_;
    case Wait::kNothing:
      break;
  }
  return -1;
}

void HttpServerCodec::arm_timer(ChannelHandlerContext& ctx, std::int64_t at) {
  if (timer_.valid() && timer_at_ <= at) return;  // it wakes up early enough
  cancel_timer();
  timer_at_ = at;
  const std::int64_t delay = std::max<std::int64_t>(0, at - ctx.executor().coarse_time_nanos());
  timer_ =
      ctx.executor().schedule(std::chrono::nanoseconds(delay), [this, &ctx] { on_timer(ctx); });
}

void HttpServerCodec::cancel_timer() {
  if (timer_.valid()) {
    timer_.cancel();
    timer_ = {};
  }
  timer_at_ = -1;
}

void HttpServerCodec::on_timer(ChannelHandlerContext& ctx) {
  timer_ = {};
  timer_at_ = -1;
  if (!ctx.channel().is_open()) return;
  // Armed no later than min_timeout_ ahead, the timer is early for any wait that begins after
  // it was armed; so requests and reads never touch it, and it only re-arms when it fires.
  const std::int64_t now = ctx.executor().coarse_time_nanos();
  observe_output(ctx, now);
  const Wait wait = waiting_for();
  // A wait whose start was not stamped (its read batch never completed) counts from now: later
  // than it began, never earlier.
  if (wait == Wait::kIdle && idle_since_ < 0) idle_since_ = now;
  if (wait == Wait::kHead && head_since_ < 0) head_since_ = now;
  if (wait == Wait::kBody && body_read_at_ < 0) body_read_at_ = now;
  const std::int64_t deadline = deadline_of(wait);
  if (deadline >= 0 && now >= deadline) {
    switch (wait) {
      case Wait::kIdle:
        close_connection(ctx, {});
        break;
      case Wait::kHead:
      case Wait::kBody:
        end_with(ctx, 408);
        break;
      case Wait::kSend:
      case Wait::kUnread:
        lingering_ = false;
        ctx.close(std::move(close_promise_));  // nothing more can be written: no lingering
        return;
      case Wait::kLinger:
        finish_lingering(ctx);
        return;
      case Wait::kNothing:
        break;
    }
    if (!ctx.channel().is_open()) return;
  }
  std::int64_t next = min_timeout_ > 0 ? now + min_timeout_ : -1;
  const std::int64_t pending = deadline_of(waiting_for());
  if (pending >= 0 && (next < 0 || pending < next)) next = std::max(pending, now);
  if (next >= 0) arm_timer(ctx, next);
}

}  // namespace trellis::http
