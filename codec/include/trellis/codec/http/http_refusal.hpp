// HttpRefusal: the outbound message by which a server handler refuses the request it is reading
// (a body too large, a failed expectation, a body that does not decompress), so that the codec
// answers it in its turn and ends the connection.
#pragma once

#include <cstdint>

#include <trellis/codec/http/http_message.hpp>

namespace trellis::http {

/// Refuses the request the writing handler is reading: written (and flushed) instead of its
/// response, it makes the server end the connection with a `status` response (the reason phrase
/// as a text/plain body, `Connection: close`).
///
/// Behind an HttpServerCodec the refusal keeps the connection's order: its response goes out
/// once every earlier request is answered, requests that were decoded after the refused one are
/// not passed on (nothing after a request that closes the connection is processed, RFC 9112
/// §9.6), and the connection then closes with a lingering close (HttpServerTimeouts). Behind a
/// plain HttpResponseEncoder the response is written at once and the channel closes when it is
/// written. Either way the write's promise completes when the channel has closed.
///
/// Write it while handling the refused request's messages (as HttpObjectAggregator does from its
/// channel_read), before any of that request's response.
struct HttpRefusal {
  /// The status of the response, 400 or above.
  std::uint16_t status = 400;

  /// The response that answers the refused request.
  FullHttpResponse response() const;
};

}  // namespace trellis::http
