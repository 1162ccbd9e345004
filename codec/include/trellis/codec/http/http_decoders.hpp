// HttpRequestDecoder and HttpResponseDecoder: ByteToMessageDecoders over the strict HttpParser.
// They emit a head, HttpContent pieces (zero-copy slices of the input) and a LastHttpContent
// per message, in order, for every message of a read (pipelining). On bad input the request
// decoder answers with the status the parser chose (400, 413, 414, 431, 501, 505) and
// "Connection: close", then closes the connection (inside an HttpServerCodec, after the
// responses to the requests before it); the response decoder fires the error. The request
// decoder stops after a request that ends the connection (RFC 9112 §9.6), inside an
// HttpServerCodec also at a response that does, and, while the channel is unwritable, before the
// next request (reading stops until it is writable again).
#pragma once

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/http/http_method_queue.hpp>
#include <trellis/codec/http/http_parser.hpp>

namespace trellis::http {

class HttpResponseEncoder;

/// How HttpRequestDecoder hands requests on.
struct HttpRequestDecoderOptions {
  /// A request without a body (neither Content-Length nor Transfer-Encoding, or Content-Length: 0)
  /// goes on as one FullHttpRequest with an empty body, instead of an HttpRequest followed by an
  /// empty LastHttpContent: what an HttpObjectAggregator would have made of the two, for one
  /// message through the pipeline instead of three. For pipelines that aggregate; the handlers
  /// between the decoder and the aggregator must take FullHttpRequest (those of this library do).
  bool full_bodiless_requests = false;
  /// Back-pressure: while the channel is unwritable (its outbound buffer above the high water
  /// mark, e.g. a client that pipelines and does not read), no further request is decoded and
  /// reading stops (auto_read off); the bytes already read wait, and decoding and reading resume
  /// once the channel is writable again. So a connection holds at most the high water mark of
  /// responses, one read buffer and one request.
  bool pause_when_unwritable = true;
  /// Inside an HttpServerCodec: at most this many requests passed on and not answered in full;
  /// the next one is decoded (and reading, which stops meanwhile, resumes) once a response ends.
  /// An application that answers at once never reaches it; one that answers later (a database
  /// call per request) gets at most this many requests of a pipelining client at a time, so the
  /// work and the memory one connection can start stay bounded (SwiftNIO's server pipeline
  /// handler allows one; Netty has no limit). 0: no limit.
  std::size_t max_unanswered_requests = 16;
};

class HttpServerCodec;

/// Decodes requests: a head (HttpRequest, or FullHttpRequest with full_bodiless_requests), its
/// HttpContent pieces and a LastHttpContent. Bad input is answered with the status the parser
/// chose and "Connection: close", then the connection closes. On the channel's loop; not sharable.
class HttpRequestDecoder : public codec::ByteToMessageDecoder {
 public:
  /// A decoder within `limits`, handing requests on as `options` says.
  explicit HttpRequestDecoder(HttpParserLimits limits = {}, HttpRequestDecoderOptions options = {})
      : parser_(HttpParser::Kind::kRequest, limits), options_(options) {}

  /// Resumes decoding (and reading) paused while the channel was unwritable.
  void channel_writability_changed(ChannelHandlerContext& ctx) override;
  /// Resumes decoding (and reading) paused while the channel was unwritable or while
  /// max_unanswered_requests were unanswered, if neither holds any more. Not from inside decoding
  /// (the requests would overtake those being passed on).
  void resume(ChannelHandlerContext& ctx);

  /// No more requests are decoded: after one that ends the connection, or after bad input.
  bool is_input_stopped() const noexcept { return input_ != Input::kOpen; }
  /// Decoding waits for the channel to become writable.
  bool is_paused() const noexcept { return paused_; }
  /// Between the first byte of a request and its last event (or with bytes of the next head
  /// waiting): more input belongs to a request in progress.
  bool in_request() const noexcept { return parser_.in_message() || actual_readable_bytes() > 0; }
  /// A request head was decoded and its body is still being read.
  bool in_body() const noexcept { return parser_.in_message(); }
  /// Bytes of a head that is not complete yet are waiting.
  bool in_head() const noexcept { return !parser_.in_message() && actual_readable_bytes() > 0; }

 protected:
  /// Decodes the messages `in` holds (ByteToMessageDecoder's loop rules).
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  /// The input ended: a request cut short is dropped (nobody is left to answer it).
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  /// A request decoded after a refused one, not passed on: it is not waited for.
  void dropped(ChannelHandlerContext& ctx, Message& msg) override;

 private:
  friend class HttpServerCodec;
  enum class Input : std::uint8_t { kOpen, kStopped, kFailed };

  void reject(ChannelHandlerContext& ctx, const HttpParseError& error);
  void on_request(HttpVersion version, const HttpHeaders& headers, HttpMethod::Id method);
  // No more requests: what is left of the input is discarded and reading stops.
  void stop_input(ChannelHandlerContext& ctx, Input why, ByteBuf& in);
  // The same without a buffer at hand (a timeout): what is pending stays unread.
  void stop(ChannelHandlerContext& ctx);
  // After a response that closes the connection: no more requests, not even those decoded and
  // not passed on yet; what is pending or comes is discarded.
  void stop_taking_requests(ChannelHandlerContext& ctx);
  void pause(ChannelHandlerContext& ctx);
  // The next request may be decoded: the channel is writable (with back-pressure on) and fewer
  // than max_unanswered_requests are unanswered.
  bool may_decode_next(ChannelHandlerContext& ctx) const noexcept;
  void hold_reading(ChannelHandlerContext& ctx);
  // full_bodiless_requests, between messages: the next head parsed into a FullHttpRequest made
  // in out (or, when a body follows, turned into an HttpRequest). False: more input needed.
  bool decode_full_request(ByteBuf& in, Out& out);

  HttpParser parser_;
  HttpRequestDecoderOptions options_;
  HttpServerCodec* codec_ = nullptr;  // set by the HttpServerCodec this decoder is part of
  Input input_ = Input::kOpen;
  bool stop_after_message_ = false;  // the request being read ends the connection
  bool request_counted_ = false;     // the message in progress had its head decoded
  bool paused_ = false;
  bool resuming_ = false;              // decoding what the pause held back
  bool resume_again_ = false;          // writable again meanwhile
  bool suppressed_auto_read_ = false;  // auto_read was on and this decoder turned it off
  std::size_t discarded_ = 0;          // bytes thrown away since the input stopped
};

/// Decodes responses: a head (HttpResponse), its HttpContent pieces and a LastHttpContent. Bad
/// input raises an HttpParseError (a DecoderError) to exception_caught. On the channel's loop; not
/// sharable.
class HttpResponseDecoder : public codec::ByteToMessageDecoder {
 public:
  /// A decoder within `limits`.
  explicit HttpResponseDecoder(HttpParserLimits limits = {})
      : parser_(HttpParser::Kind::kResponse, limits) {}

  /// Set by HttpClientCodec as requests are written: responses to HEAD (and 2xx to CONNECT)
  /// have no body whatever their headers say.
  void on_request_method(HttpMethod::Id method) { methods_.push_back(method); }

 protected:
  /// Decodes the messages `in` holds (ByteToMessageDecoder's loop rules).
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  /// The input ended: completes a body delimited by the connection's close; a response cut
  /// short is an HttpParseError.
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  void emit(HttpParser::Event&& event, Out& out);

  HttpParser parser_;
  HttpMethodQueue methods_;
};

}  // namespace trellis::http
