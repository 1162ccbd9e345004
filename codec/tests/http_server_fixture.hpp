// The server side of the HttpServerCodec tests: an application that answers each request with
// its target (at once or when told), and the echo example's pipeline around it on an
// EmbeddedChannel with a frozen clock.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

namespace trellis::testing::server_fixture {

using namespace trellis::http;
using namespace std::chrono_literals;

inline constexpr auto kOneNs = std::chrono::nanoseconds(1);

// Answers each request with its target as the body, at once (as a synchronous server) or, when
// deferred, only when the test calls answer().
class Answerer final : public SimpleChannelInboundHandler<FullHttpRequest> {
 public:
  explicit Answerer(bool deferred = false, std::size_t body_bytes = 0)
      : deferred_(deferred), body_bytes_(body_bytes) {}

  void answer(std::size_t n = 1) {
    for (; n > 0 && !targets_.empty(); --n) {
      respond(*ctx_, targets_.front());
      targets_.pop_front();
    }
    ctx_->flush();
  }
  std::size_t seen() const noexcept { return seen_; }

 protected:
  void handler_added(ChannelHandlerContext& ctx) override { ctx_ = &ctx; }
  void channel_read0(ChannelHandlerContext& ctx, FullHttpRequest& request) override {
    ++seen_;
    if (deferred_) {
      targets_.push_back(request.target);
    } else {
      respond(ctx, request.target);
    }
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ctx.flush();
    ctx.fire_channel_read_complete();
  }

 private:
  void respond(ChannelHandlerContext& ctx, const std::string& target) {
    FullHttpResponse response;
    std::string body = target;
    if (body.size() < body_bytes_) body.append(body_bytes_ - body.size(), '.');
    response.content = ByteBuf::from(body);
    ctx.write(Message(std::move(response)));
  }

  bool deferred_;
  std::size_t body_bytes_;
  std::deque<std::string> targets_;
  std::size_t seen_ = 0;
  ChannelHandlerContext* ctx_ = nullptr;
};

inline HttpServerTimeouts short_timeouts() {
  HttpServerTimeouts t;
  t.header_timeout = 30s;
  t.body_timeout = 60s;
  t.idle_timeout = 60s;
  t.send_timeout = 60s;
  return t;
}

// codec + keep-alive + aggregator + answerer, as the echo example's pipeline.
struct Server {
  explicit Server(HttpServerTimeouts timeouts = short_timeouts(), bool deferred = false,
                  std::size_t body_bytes = 0, bool pause_when_unwritable = true)
      : answerer(std::make_shared<Answerer>(deferred, body_bytes)),
        codec(std::make_shared<HttpServerCodec>(HttpParserLimits{}, encoder_options(),
                                                decoder_options(pause_when_unwritable), timeouts)),
        ch(EmbeddedChannel::Options{.register_channel = false}, codec,
           std::make_shared<HttpServerKeepAliveHandler>(),
           std::make_shared<HttpObjectAggregator>(1024), answerer) {
    ch.freeze_time();  // before the channel is active: every stamp on the frozen timeline
    ch.register_channel();
  }
  static HttpResponseEncoder::Options encoder_options() {
    HttpResponseEncoder::Options o;
    o.add_date_header = false;
    return o;
  }
  static HttpRequestDecoderOptions decoder_options(bool pause_when_unwritable) {
    HttpRequestDecoderOptions o;
    o.full_bodiless_requests = true;
    o.pause_when_unwritable = pause_when_unwritable;
    return o;
  }
  void send(const std::string& bytes) { ch.write_inbound(ByteBuf::from(bytes)); }
  std::string out() { return testing::drain_outbound_bytes(ch); }

  std::shared_ptr<Answerer> answerer;
  std::shared_ptr<HttpServerCodec> codec;
  EmbeddedChannel ch;
};

inline const std::string kGet1 = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n";
inline const std::string kGet3 = "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n";
inline const std::string kBad =
    "GET /2 HTTP/1.1\r\nHost : x\r\n\r\n";  // whitespace before the colon

inline const std::string k200One = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n/1";

inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace trellis::testing::server_fixture
