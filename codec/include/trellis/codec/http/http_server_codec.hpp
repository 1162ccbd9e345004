// HttpServerCodec: HttpRequestDecoder and HttpResponseEncoder in one handler (Netty's
// HttpServerCodec), sharing what the encoder must know of the requests (HEAD has no body), and
// the connection's discipline as a whole: responses in request order (its own error and timeout
// responses too), no request processed after one that closes the connection, request read
// timeouts on the loop's clock, back-pressure, and a lingering close after errors.
// HttpClientCodec: HttpRequestEncoder and HttpResponseDecoder, sharing the request methods.
#pragma once

#include <chrono>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include <trellis/codec/http/http_decoders.hpp>
#include <trellis/codec/http/http_refusal.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/pipeline/combined_channel_duplex_handler.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::http {

/// How long an HTTP server connection may take over each part of a request, on the loop's clock
/// (the executor's coarse_time_nanos()); zero turns one off. On expiry: 408 Request Timeout when
/// no response is in progress (after the responses to earlier requests otherwise), then close.
/// The read timeouts do not run while flushed responses wait for the client to read them (the
/// server holds back then, not the client); they count anew once the responses were taken.
struct HttpServerTimeouts {
  /// From the first byte of a request head to its end (nginx: client_header_timeout, 60 s).
  std::chrono::nanoseconds header_timeout = std::chrono::seconds(30);
  /// The longest gap between two reads of a request body (nginx: client_body_timeout, 60 s).
  std::chrono::nanoseconds body_timeout = std::chrono::seconds(60);
  /// A persistent connection with no request in progress and nothing to answer (nginx:
  /// keepalive_timeout, 75 s). Closed without a response.
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(60);
  /// How long the connection may stay unwritable, or keep flushed responses in its outbound
  /// buffer without any being taken (the client does not read what it asked for; nginx:
  /// send_timeout, 60 s). Closed without a response. The second is seen when the codec's timer
  /// fires, up to the shortest timeout after it began: never earlier than send_timeout.
  std::chrono::nanoseconds send_timeout = std::chrono::seconds(60);
  /// The lingering close after an error response (nginx: lingering_time / lingering_timeout): the
  /// output is shut down and input read and discarded for at most this long and this many bytes,
  /// so that a client still sending reads the response instead of a connection reset.
  std::chrono::nanoseconds linger_timeout = std::chrono::seconds(2);
  /// The most bytes read and discarded during a lingering close.
  std::size_t linger_max_bytes = 64 * 1024;
};

/// The HTTP/1.1 server side of a connection: decodes requests (HttpRequestDecoder), encodes
/// responses (HttpResponseEncoder) and keeps the connection's discipline: responses go out in
/// request order (its own error and timeout responses, the handlers' HttpRefusals and interim
/// 1xx responses too), no request is processed after one that closes the connection, the read
/// timeouts of HttpServerTimeouts apply, reading pauses while the channel is unwritable, and a
/// close after an error lingers. Bad input is answered with the status the parser chose and
/// "Connection: close". One per channel (not sharable); its callbacks run on the channel's loop,
/// its accessors must be called there too.
class HttpServerCodec : public ChannelDuplexHandler {
 public:
  /// A codec with these parser limits, encoder and decoder options, and timeouts.
  explicit HttpServerCodec(HttpParserLimits limits = {},
                           HttpResponseEncoder::Options encoder_options = {},
                           HttpRequestDecoderOptions decoder_options = {},
                           HttpServerTimeouts timeouts = {});
  ~HttpServerCodec() override;

  /// @name Handler callbacks
  ///@{

  /// The codec's side of the event: see the class description.
  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_active(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_writability_changed(ChannelHandlerContext& ctx) override;
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  void flush(ChannelHandlerContext& ctx) override { encoder_.flush(ctx); }
  ///@}
  /// A close while more of a request may still come (an error, a refused body) is a lingering
  /// close (see HttpServerTimeouts::linger_timeout); otherwise the channel closes at once.
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  /// The same as close (a TCP connection has nothing else to disconnect).
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    close(ctx, std::move(promise));
  }

  /// Bytes of responses held by the encoder until the next flush (tests and diagnostics).
  std::size_t held_bytes() const noexcept { return encoder_.held_bytes(); }
  /// The timeouts this codec was made with.
  const HttpServerTimeouts& timeouts() const noexcept { return timeouts_; }
  /// Requests decoded and not answered in full yet.
  std::size_t unanswered() const noexcept { return unanswered_; }
  /// True during a lingering close.
  bool is_lingering() const noexcept { return lingering_; }

 private:
  friend class HttpRequestDecoder;
  // What the connection waits for now, which decides the deadline that applies.
  enum class Wait : std::uint8_t { kNothing, kIdle, kHead, kBody, kSend, kUnread, kLinger };

  void on_request_decoded(HttpMethod::Id method);
  void on_request_dropped() noexcept;
  // An HttpRefusal written by a handler: the last request passed on is answered with its status
  // in its turn, and nothing after it is passed on.
  void refuse(ChannelHandlerContext& ctx, std::uint16_t status, ChannelPromise promise);
  void on_decode_error(ChannelHandlerContext& ctx, std::uint16_t status);
  // A response the connection ends with (an error, a timeout): written once every request
  // before it is answered, then the connection closes (lingering).
  void end_with(ChannelHandlerContext& ctx, std::uint16_t status);
  void write_final_response(ChannelHandlerContext& ctx);
  void close_connection(ChannelHandlerContext& ctx, ChannelPromise promise);
  void start_lingering(ChannelHandlerContext& ctx);
  void finish_lingering(ChannelHandlerContext& ctx);
  bool more_input_may_come() const noexcept;
  // Responses end: FullHttpResponse (not 1xx) or the LastHttpContent of a streamed one.
  bool ends_response(const Message& msg) noexcept;
  // An interim (1xx) response answers the last request passed on: while requests before it are
  // unanswered it would read as theirs, so it waits (with the LastHttpContent after its head).
  bool holds_interim(const Message& msg) const noexcept;
  void release_interim(ChannelHandlerContext& ctx);
  void fail_held_interim() noexcept;
  Wait waiting_for() const noexcept;
  std::int64_t deadline_of(Wait wait) const noexcept;
  // The single lazy timer (as Netty's IdleStateHandler): reads and responses only record
  // times; the timer, armed no later than the shortest timeout ahead, acts or sleeps on.
  void arm_timer(ChannelHandlerContext& ctx, std::int64_t at);
  void on_timer(ChannelHandlerContext& ctx);
  void cancel_timer();
  void stamp(ChannelHandlerContext& ctx);
  // The read waits (head, body, idle) start again from now: the client was not at fault while
  // its responses waited for it.
  void restart_read_waits(std::int64_t now) noexcept;
  // At each tick: are flushed responses waiting for the client to read them, and since when.
  void observe_output(ChannelHandlerContext& ctx, std::int64_t now);

  HttpRequestDecoder decoder_;
  HttpResponseEncoder encoder_;
  HttpServerTimeouts timeouts_;
  std::int64_t min_timeout_ = 0;  // the shortest timeout on, in ns (0: none)

  std::size_t unanswered_ = 0;  // requests decoded and not answered in full
  bool streaming_ = false;      // a final HttpResponse head went out, its body has not ended
  bool interim_ = false;  // a 1xx HttpResponse head went out (its LastHttpContent ends nothing)
  std::uint16_t final_status_ = 0;  // the response the connection ends with, once it can go
  bool refused_ = false;  // final_status_ answers the last request passed on (an HttpRefusal)
  bool close_after_response_ = false;  // the response going out says Connection: close
  int driving_ = 0;               // inside a call that drives the decoder (see Driving in the .cpp)
  bool holding_interim_ = false;  // an interim head is held: its LastHttpContent is held too
  std::vector<std::pair<Message, ChannelPromise>> held_interim_;
  bool closing_ = false;  // the connection is being closed (or lingers)
  bool lingering_ = false;
  ChannelPromise close_promise_;  // completed when a lingering close ends
  std::size_t linger_bytes_ = 0;  // discarded while lingering

  // Times on the coarse clock (-1: not stamped).
  std::int64_t idle_since_ = -1;
  std::int64_t head_since_ = -1;
  std::int64_t body_read_at_ = -1;
  std::int64_t unwritable_since_ = -1;
  std::int64_t output_stalled_since_ = -1;  // flushed responses unwritten, not moving, since
  std::size_t output_sample_ = 0;           // their bytes at the last tick
  std::int64_t linger_until_ = -1;
  bool read_in_batch_ = false;  // bytes came since the last channel_read_complete
  std::int64_t timer_at_ = -1;
  ScheduledFuture<void> timer_;
  ChannelHandlerContext* ctx_ = nullptr;
};

/// The HTTP/1.1 client side of a connection: encodes requests (HttpRequestEncoder) and decodes
/// responses (HttpResponseDecoder), telling the decoder each request's method so that responses
/// to HEAD and CONNECT are framed right. A CombinedChannelDuplexHandler of the two. One per
/// channel (not sharable); on the channel's loop.
class HttpClientCodec
    : public CombinedChannelDuplexHandler<HttpResponseDecoder, HttpRequestEncoder> {
 public:
  /// A codec whose response parser has these limits.
  explicit HttpClientCodec(HttpParserLimits limits = {})
      : CombinedChannelDuplexHandler(std::piecewise_construct, std::forward_as_tuple(limits),
                                     std::tuple<>()) {}

  /// Counts the bytes received, then hands the message to the response decoder.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (const auto* bytes = msg.try_get<ByteBuf>()) inbound_bytes_ += bytes->readable_bytes();
    CombinedChannelDuplexHandler::channel_read(ctx, std::move(msg));
  }
  /// Bytes received so far: the client tells a connection closed before any byte of a response
  /// (stale, safe to retry on) from one closed in the middle of it.
  std::uint64_t inbound_bytes() const noexcept { return inbound_bytes_; }
  /// Bytes received and not decoded yet. While a response is passed on, the bytes that followed
  /// it in the same read (the decoder stops at the end of every response).
  std::size_t buffered_inbound_bytes() const noexcept {
    return inbound_handler().actual_readable_bytes();
  }
  /// Encodes the request, then tells the response decoder its method (a request the encoder
  /// refused is not sent, so no response answers it).
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    bool is_request = true;
    HttpMethod::Id method = HttpMethod::kGet;
    if (auto* r = msg.try_get<HttpRequest>()) {
      method = r->method.id();
    } else if (auto* f = msg.try_get<FullHttpRequest>()) {
      method = f->method.id();
    } else {
      is_request = false;
    }
    CombinedChannelDuplexHandler::write(ctx, std::move(msg), std::move(promise));
    if (is_request) inbound_handler().on_request_method(method);
  }

 private:
  std::uint64_t inbound_bytes_ = 0;
};

}  // namespace trellis::http
