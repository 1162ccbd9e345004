// The HTTP decoders (see http_decoders.hpp).
#include <trellis/codec/http/http_decoders.hpp>

#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
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
  if (failed_) {
    in.skip_bytes(in.readable_bytes());  // the connection is closing: ignore the rest
    return;
  }
  try {
    // Every event available now, so that each decode() call consumes what it reports (an empty
    // last content right after a head consumes nothing of its own).
    for (;;) {
      auto event = parser_.parse(in);
      if (std::holds_alternative<std::monostate>(event)) return;
      if (auto* request = std::get_if<HttpRequest>(&event)) {
        if (encoder_) encoder_->on_request_method(request->method.id());
        if (options_.full_bodiless_requests && parser_.at_empty_body()) {
          parser_.skip_empty_body();
          // Filled in its message: one move of the head's parts, none of the whole request, and
          // no zeroing of it first.
          auto& full = out.emplace_back().emplace_for_overwrite<FullHttpRequest>();
          full.method = std::move(request->method);
          full.target = std::move(request->target);
          full.version = request->version;
          full.headers = std::move(request->headers);
          continue;
        }
      }
      push_event(std::move(event), out);
    }
  } catch (const HttpParseError& error) {
    failed_ = true;
    in.skip_bytes(in.readable_bytes());
    reject(ctx, error);
  }
}

void HttpRequestDecoder::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (failed_) return;
  decode(ctx, in, out);
  try {
    push_event(parser_.finish(in), out);
  } catch (const HttpParseError&) {
    // The client went away in the middle of a request: there is nobody to answer.
  }
}

void HttpRequestDecoder::reject(ChannelHandlerContext& ctx, const HttpParseError& error) {
  // Written as bytes: the response encoder may sit on the tail side of this decoder.
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
  spdlog::debug("[{}] bad HTTP request ({}): {}", ctx.channel().id().as_short_text(),
                error.status(), error.what());
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
    emit(std::move(event), out);
  }
}

void HttpResponseDecoder::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  decode(ctx, in, out);
  emit(parser_.finish(in), out);
}

}  // namespace trellis::http
