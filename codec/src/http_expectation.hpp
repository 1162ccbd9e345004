// Expect handling for servers (RFC 9110 §10.1.1), shared by HttpServerExpectContinueHandler and
// HttpObjectAggregator (which, as Netty's, answers expectations itself), and the refusal they
// and HttpContentDecompressor send when a request cannot be served.
#pragma once

#include <cstdint>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::http::detail {

// Answers the expectation of a request head, if any. "100-continue" gets an interim
// "100 Continue" so that the client sends the body; any other expectation gets 417, and the
// connection closes once that is written (see refuse). HTTP/1.0 expectations are ignored, as the
// RFC requires. The Expect field is removed whenever there was one. Returns false when the request
// was refused: it and its body must be dropped. (A handler with a body limit refuses an
// announced body over it first, so that it is not invited.)
bool answer_expectation(ChannelHandlerContext& ctx, HttpVersion version, HttpHeaders& headers);

// Refuses the request being read with `status` (an HttpRefusal, written and flushed): answered in
// its turn, and the connection closes after it.
void refuse(ChannelHandlerContext& ctx, std::uint16_t status);

// The length a (parser-validated) Content-Length field gives, also in its list form ("5, 5"),
// or -1 when there is none or it is not a number.
std::int64_t content_length_of(const HttpHeaders& headers) noexcept;

}  // namespace trellis::http::detail
