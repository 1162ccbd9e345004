// HttpRequestDecoder and HttpResponseDecoder: ByteToMessageDecoders over the strict HttpParser.
// They emit a head, HttpContent pieces (zero-copy slices of the input) and a LastHttpContent
// per message, in order, for every message of a read (pipelining). On bad input the request
// decoder answers with the status the parser chose (400, 413, 414, 431, 501, 505) and
// "Connection: close", then closes the connection; the response decoder fires the error.
#pragma once

#include <deque>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/http/http_parser.hpp>

namespace trellis::http {

class HttpResponseEncoder;

// How HttpRequestDecoder hands requests on.
struct HttpRequestDecoderOptions {
  // A request without a body (neither Content-Length nor Transfer-Encoding, or Content-Length: 0)
  // goes on as one FullHttpRequest with an empty body, instead of an HttpRequest followed by an
  // empty LastHttpContent: what an HttpObjectAggregator would have made of the two, for one
  // message through the pipeline instead of three. For pipelines that aggregate; the handlers
  // between the decoder and the aggregator must take FullHttpRequest (those of this library do).
  bool full_bodiless_requests = false;
};

class HttpRequestDecoder : public codec::ByteToMessageDecoder {
 public:
  explicit HttpRequestDecoder(HttpParserLimits limits = {}, HttpRequestDecoderOptions options = {})
      : parser_(HttpParser::Kind::kRequest, limits), options_(options) {}

  // Set by HttpServerCodec: the encoder learns each request's method (for HEAD).
  void pair_with(HttpResponseEncoder* encoder) noexcept { encoder_ = encoder; }

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  void reject(ChannelHandlerContext& ctx, const HttpParseError& error);
  // full_bodiless_requests, between messages: the next head parsed into a FullHttpRequest made
  // in out (or, when a body follows, turned into an HttpRequest). False: more input needed.
  bool decode_full_request(ByteBuf& in, Out& out);

  HttpParser parser_;
  HttpRequestDecoderOptions options_;
  HttpResponseEncoder* encoder_ = nullptr;
  bool failed_ = false;
};

class HttpResponseDecoder : public codec::ByteToMessageDecoder {
 public:
  explicit HttpResponseDecoder(HttpParserLimits limits = {})
      : parser_(HttpParser::Kind::kResponse, limits) {}

  // Set by HttpClientCodec as requests are written: responses to HEAD (and 2xx to CONNECT)
  // have no body whatever their headers say.
  void on_request_method(HttpMethod::Id method) { methods_.push_back(method); }

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  void emit(HttpParser::Event&& event, Out& out);

  HttpParser parser_;
  std::deque<HttpMethod::Id> methods_;
};

}  // namespace trellis::http
