// HttpServerCodec: HttpRequestDecoder and HttpResponseEncoder in one handler (Netty's
// HttpServerCodec), sharing what the encoder must know of the requests (HEAD has no body).
// HttpClientCodec: HttpRequestEncoder and HttpResponseDecoder, sharing the request methods.
#pragma once

#include <trellis/codec/http/http_decoders.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>

namespace trellis::http {

class HttpServerCodec : public ChannelDuplexHandler {
 public:
  explicit HttpServerCodec(HttpParserLimits limits = {},
                           HttpResponseEncoder::Options encoder_options = {},
                           HttpRequestDecoderOptions decoder_options = {})
      : decoder_(limits, decoder_options), encoder_(encoder_options) {
    decoder_.pair_with(&encoder_);
  }

  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    // Responses written while this buffer is decoded share one clock reading (for Date).
    struct Batch {
      HttpResponseEncoder& encoder;
      explicit Batch(HttpResponseEncoder& e) : encoder(e) { encoder.begin_read_batch(); }
      ~Batch() { encoder.end_read_batch(); }
    } batch(encoder_);
    decoder_.channel_read(ctx, std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    decoder_.channel_read_complete(ctx);
  }
  void channel_inactive(ChannelHandlerContext& ctx) override { decoder_.channel_inactive(ctx); }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    decoder_.user_event_triggered(ctx, std::move(event));
  }
  void handler_removed(ChannelHandlerContext& ctx) override {
    encoder_.handler_removed(ctx);
    decoder_.handler_removed(ctx);
  }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    encoder_.write(ctx, std::move(msg), std::move(promise));
  }
  void flush(ChannelHandlerContext& ctx) override { encoder_.flush(ctx); }
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    encoder_.close(ctx, std::move(promise));
  }
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    encoder_.disconnect(ctx, std::move(promise));
  }
  // Bytes of responses held by the encoder until the next flush (tests and diagnostics).
  std::size_t held_bytes() const noexcept { return encoder_.held_bytes(); }

 private:
  HttpRequestDecoder decoder_;
  HttpResponseEncoder encoder_;
};

class HttpClientCodec : public ChannelDuplexHandler {
 public:
  explicit HttpClientCodec(HttpParserLimits limits = {}) : decoder_(limits) {}

  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    decoder_.channel_read(ctx, std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    decoder_.channel_read_complete(ctx);
  }
  void channel_inactive(ChannelHandlerContext& ctx) override { decoder_.channel_inactive(ctx); }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    decoder_.user_event_triggered(ctx, std::move(event));
  }
  void handler_removed(ChannelHandlerContext& ctx) override { decoder_.handler_removed(ctx); }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    if (auto* r = msg.try_get<HttpRequest>()) {
      decoder_.on_request_method(r->method.id());
    } else if (auto* f = msg.try_get<FullHttpRequest>()) {
      decoder_.on_request_method(f->method.id());
    }
    encoder_.write(ctx, std::move(msg), std::move(promise));
  }

 private:
  HttpResponseDecoder decoder_;
  HttpRequestEncoder encoder_;
};

}  // namespace trellis::http
