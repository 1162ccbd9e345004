// The HTTP decoders (see http_decoders.hpp).
#include <trellis/codec/http/http_decoders.hpp>

#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/codec/http/http_server_codec.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

#include <spdlog/spdlog.h>

namespace trellis::http {

namespace {
template <class Out>
void push_event(HttpParser::Event&& e, Out& out) {
  std::visit(
      [&out](auto&& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (!std::is_same_v<V, std::monostate>) out.emplace_back(std::move(v));
      },
      std::move(e));
}
}  // namespace

void HttpRequestDecoder::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (input_ != Input::kOpen) {
    discarded_ += in.readable_bytes();  // no more requests: the rest is not for anyone
    in.skip_bytes(in.readable_bytes());
    return;
  }
  try {
    // Every event available now, so that each decode() call consumes what it reports (an empty
    // last content right after a head consumes nothing of its own).
    for (;;) {
      if (!parser_.in_message()) {
        request_counted_ = false;
        if (!in.is_readable()) return;
        // With back-pressure on, a whole request goes on before the next one is looked at: its
        // response may make the channel unwritable, which pauses the decoding of the next.
        if (options_.pause_when_unwritable && !out.empty()) return;
        if (stop_after_message_) {
          // RFC 9112 §9.6: nothing after a request that closes the connection is processed.
          stop_input(ctx, Input::kStopped, in);
          return;
        }
        if (!may_decode_next(ctx)) {
          pause(ctx);
          return;
        }
        if (options_.full_bodiless_requests) {
          if (!decode_full_request(in, out)) return;
          continue;
        }
      }
      auto event = parser_.parse(in);
      if (std::holds_alternative<std::monostate>(event)) return;
      if (auto* request = std::get_if<HttpRequest>(&event)) {
        on_request(request->version, request->headers, request->method.id());
      }
      push_event(std::move(event), out);
    }
  } catch (const HttpParseError& error) {
    stop_input(ctx, Input::kFailed, in);
    reject(ctx, error);
  }
}

void HttpRequestDecoder::on_request(HttpVersion version, const HttpHeaders& headers,
                                    HttpMethod::Id method) {
  if (!is_keep_alive(version, headers)) stop_after_message_ = true;
  request_counted_ = true;
  if (codec_) codec_->on_request_decoded(method);
}

void HttpRequestDecoder::dropped(ChannelHandlerContext&, Message& msg) {
  if (codec_ && (msg.is<HttpRequest>() || msg.is<FullHttpRequest>())) codec_->on_request_dropped();
}

void HttpRequestDecoder::stop_input(ChannelHandlerContext& ctx, Input why, ByteBuf& in) {
  input_ = why;
  discarded_ += in.readable_bytes();
  in.skip_bytes(in.readable_bytes());
  // Nothing more is wanted from this connection (until a lingering close drains it).
  hold_reading(ctx);
}

void HttpRequestDecoder::stop_taking_requests(ChannelHandlerContext& ctx) {
  input_ = Input::kStopped;
  drop_undelivered();
  hold_reading(ctx);
}

void HttpRequestDecoder::stop(ChannelHandlerContext& ctx) {
  input_ = Input::kFailed;
  hold_reading(ctx);
}

void HttpRequestDecoder::hold_reading(ChannelHandlerContext& ctx) {
  set_input_held(true);
  auto& config = ctx.channel().config();
  if (config.auto_read()) {
    suppressed_auto_read_ = true;
    config.set_auto_read(false);
  }
}

void HttpRequestDecoder::pause(ChannelHandlerContext& ctx) {
  paused_ = true;
  hold_reading(ctx);
}

bool HttpRequestDecoder::may_decode_next(ChannelHandlerContext& ctx) const noexcept {
  if (options_.pause_when_unwritable && !ctx.channel().is_writable()) return false;
  return codec_ == nullptr || options_.max_unanswered_requests == 0 ||
         codec_->unanswered() < options_.max_unanswered_requests;
}

void HttpRequestDecoder::channel_writability_changed(ChannelHandlerContext& ctx) {
  resume(ctx);
  ctx.fire_channel_writability_changed();
}

void HttpRequestDecoder::resume(ChannelHandlerContext& ctx) {
  if (!paused_ || !may_decode_next(ctx)) return;
  if (resuming_) {
    // Free to go on while the requests held back are being decoded (their responses were
    // written from inside): the loop below goes on, no recursion per response.
    resume_again_ = true;
    return;
  }
  resuming_ = true;
  try {
    do {
      resume_again_ = false;
      paused_ = false;
      set_input_held(false);
      decode_pending(ctx);  // may pause again
    } while (resume_again_ && paused_ && may_decode_next(ctx));
  } catch (...) {
    resuming_ = false;
    throw;
  }
  resuming_ = false;
  if (!paused_ && input_ == Input::kOpen) {
    if (suppressed_auto_read_) {
      suppressed_auto_read_ = false;
      ctx.channel().config().set_auto_read(true);
    } else if (!ctx.channel().config().auto_read()) {
      ctx.read();  // the application reads on demand: the read the pause held back
    }
  }
}

bool HttpRequestDecoder::decode_full_request(ByteBuf& in, Out& out) {
  // The head is parsed straight into a FullHttpRequest in its message (no request is moved
  // about); the message is made only once the whole head is there.
  const std::size_t before = out.size();
  try {
    const bool parsed = parser_.parse_request_head(in, [&] {
      auto& full = out.emplace_back().emplace_for_overwrite<FullHttpRequest>();
      return HttpParser::RequestHeadParts{full.method, full.target, full.version, full.headers};
    });
    if (!parsed) return false;
  } catch (...) {
    if (out.size() > before) out.pop_back();  // a request rejected half-parsed goes nowhere
    throw;
  }
  auto& full = out.back().get<FullHttpRequest>();
  on_request(full.version, full.headers, full.method.id());
  if (parser_.at_empty_body()) {
    parser_.skip_empty_body();
    return true;
  }
  // A body follows: the head goes on as an HttpRequest and the body as content, as without the
  // option (the aggregator, if any, joins them).
  HttpRequest head;
  head.method = std::move(full.method);
  head.target = std::move(full.target);
  head.version = full.version;
  head.headers = std::move(full.headers);
  out.back() = Message(std::move(head));
  return true;
}

void HttpRequestDecoder::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (input_ != Input::kOpen) return;
  decode(ctx, in, out);
  try {
    push_event(parser_.finish(in), out);
  } catch (const HttpParseError&) {
    // The client went away in the middle of a request: there is nobody to answer.
  }
}

void HttpRequestDecoder::reject(ChannelHandlerContext& ctx, const HttpParseError& error) {
  spdlog::debug("[{}] bad HTTP request ({}): {}", ctx.channel().id().as_short_text(),
                error.status(), error.what());
  if (codec_) {
    // The codec answers after the responses to the requests before this one, then closes.
    codec_->on_decode_error(ctx, error.status());
    return;
  }
  // Alone, written as bytes: the response encoder may sit on the tail side of this decoder.
  const std::string body = std::string(reason_phrase(error.status())) + "\n";
  HttpHeaders headers;
  headers.add(HeaderId::kContentType, "text/plain; charset=utf-8");
  headers.add(HeaderId::kContentLength, std::to_string(body.size()));
  headers.add(HeaderId::kConnection, "close");
  ByteBuf wire = ctx.alloc().buffer(160);
  write_response_head(wire, kHttp11, HttpResponseStatus{error.status(), {}}, headers);
  wire.write_string(body);
  auto done = ctx.new_promise();
  ctx.write_and_flush(Message(std::move(wire)), done);
  done.future().add_listener([&channel = ctx.channel()](const Future<void>&) { channel.close(); });
  // Answered and closing: that is the handling. Not fired down the pipeline, so a client sending
  // garbage cannot flood the log through the tail.
}

void HttpResponseDecoder::emit(HttpParser::Event&& event, Out& out) {
  if (auto* response = std::get_if<HttpResponse>(&event)) {
    if (response->status.code >= 200 && !methods_.empty()) methods_.pop_front();
  }
  push_event(std::move(event), out);
}

void HttpResponseDecoder::decode(ChannelHandlerContext&, ByteBuf& in, Out& out) {
  for (;;) {
    if (!parser_.in_message()) {
      const bool bodyless = !methods_.empty() && (methods_.front() == HttpMethod::kHead ||
                                                  methods_.front() == HttpMethod::kConnect);
      parser_.set_next_response_bodyless(bodyless);
    }
    auto event = parser_.parse(in);  // HttpParseError reaches exception_caught as a DecoderError
    if (std::holds_alternative<std::monostate>(event)) return;
    const bool end = std::holds_alternative<LastHttpContent>(event);
    emit(std::move(event), out);
    // A response ends the call: the bytes after it stay in the cumulation while it is passed on,
    // so that the client can tell a response followed by bytes nobody asked for (a body on a
    // HEAD response, more than Content-Length, a response to no request) from one that ends the
    // read, before it sends another request on the connection.
    if (end) return;
  }
}

void HttpResponseDecoder::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  decode(ctx, in, out);
  emit(parser_.finish(in), out);
}

}  // namespace trellis::http
