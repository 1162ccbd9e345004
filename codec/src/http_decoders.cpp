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
      if (options_.full_bodiless_requests && !parser_.in_message()) {
        if (!in.is_readable() || !decode_full_request(in, out)) return;
        continue;
      }
      auto event = parser_.parse(in);
      if (std::holds_alternative<std::monostate>(event)) return;
      if (auto* request = std::get_if<HttpRequest>(&event)) {
        if (encoder_) encoder_->on_request_method(request->method.id());
      }
      push_event(std::move(event), out);
    }
  } catch (const HttpParseError& error) {
    failed_ = true;
    in.skip_bytes(in.readable_bytes());
    reject(ctx, error);
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
  if (encoder_) encoder_->on_request_method(full.method.id());
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
