// Http2FrameCodec end to end: a client codec and a server codec on two EmbeddedChannels that
// exchange bytes, with small windows so that data waits for WINDOW_UPDATE both ways; and the
// allocation budget of a steady request/response on the server side.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include "http2_codec_test_support.hpp"

using namespace trellis;
using namespace trellis::http2;
using namespace trellis::http2::test;

namespace {

// Moves the bytes each channel wrote to the other until neither writes any more.
void pump(EmbeddedChannel& a, EmbeddedChannel& b) {
  for (int i = 0; i < 1000; ++i) {
    ByteBuf ab = take_outbound(a);
    ByteBuf ba = take_outbound(b);
    if (!ab.is_readable() && !ba.is_readable()) return;
    if (ab.is_readable() && b.is_open()) b.write_inbound(std::move(ab));
    if (ba.is_readable() && a.is_open()) a.write_inbound(std::move(ba));
  }
  FAIL("the channels kept talking");
}

// The server application: answers each request with its body echoed back, as it arrives.
struct EchoServer : ChannelInboundHandler {
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (auto* h = msg.try_get<Http2HeadersFrame>()) {
      if (h->headers.pseudo_header_count() == 0) return;  // trailers
      const std::uint32_t id = h->stream_id;
      const bool end = h->end_stream;
      h->headers.clear();
      h->headers.add(":status", "200");
      h->end_stream = end;
      ctx.write_and_flush(std::move(msg));
      (void)id;
    } else if (auto* d = msg.try_get<Http2DataFrame>()) {
      ctx.write_and_flush(
          Message(Http2DataFrame{d->stream_id, std::move(d->data), d->end_stream, 0}));
    }
  }
};

}  // namespace

TEST_CASE("a client and a server codec exchange requests and bodies larger than the windows") {
  Http2FrameCodecOptions client_options;
  client_options.role = Http2Role::kClient;
  client_options.initial_window_size = 1000;
  Http2FrameCodecOptions server_options;
  server_options.initial_window_size = 3000;
  auto client = std::make_shared<Http2FrameCodec>(client_options);
  auto server = std::make_shared<Http2FrameCodec>(server_options);
  EmbeddedChannel c(client);
  EmbeddedChannel s(server, std::make_shared<EchoServer>());
  pump(c, s);
  while (c.read_inbound()) {
  }

  const std::string body(20000, 'b');
  for (std::uint32_t id : {1u, 3u, 5u}) {
    c.write_outbound(headers_frame(id, request("/echo", "POST"), false));
    c.write_outbound(data_frame(id, body, true));
  }
  pump(c, s);

  std::map<std::uint32_t, std::string> received;
  std::map<std::uint32_t, bool> ended;
  int headers = 0;
  while (auto m = c.read_inbound()) {
    if (auto* h = m->try_get<Http2HeadersFrame>()) {
      ++headers;
      CHECK(h->headers.get(":status") == "200");
    } else if (auto* d = m->try_get<Http2DataFrame>()) {
      received[d->stream_id] += d->data.to_string();
      ended[d->stream_id] = d->end_stream;
      client->consume_bytes(d->stream_id, static_cast<std::uint32_t>(d->data.readable_bytes()));
    }
  }
  CHECK(headers == 3);
  for (std::uint32_t id : {1u, 3u, 5u}) {
    CHECK(received[id] == body);
    CHECK(ended[id]);
    CHECK(client->stream_state(id) == Http2StreamState::kClosed);
    CHECK(server->stream_state(id) == Http2StreamState::kClosed);
  }
  CHECK(c.is_open());
  CHECK(s.is_open());
  CHECK(client->active_streams() == 0);
  CHECK(server->active_streams() == 0);

  // A graceful shutdown from the server ends both sides cleanly.
  server->start_graceful_shutdown();
  pump(c, s);
  CHECK_FALSE(s.is_open());
  CHECK(client->go_away_received());
}

TEST_CASE("a steady request/response through the server codec allocates nothing") {
  auto server = std::make_shared<Http2FrameCodec>();
  EmbeddedChannel s(server, std::make_shared<EchoServer>());
  Http2FrameWriter client;
  CompositeByteBuf start;
  client.write_preface(start);
  client.write_settings(start, std::vector<Http2Setting>{});
  client.write_settings_ack(start);
  s.write_inbound(start.consolidate());
  take_outbound(s);
  const Http2Headers get = request("/index.html");

  std::uint32_t id = 1;
  auto one = [&] {
    CompositeByteBuf out;
    client.write_headers(out, id, get, true);
    id += 2;
    ByteBuf wire = out.consolidate();
    s.write_inbound(std::move(wire));
    while (auto m = s.read_outbound()) {
    }
    s.user_events().clear();
  };
  for (int i = 0; i < 100; ++i) one();
  // The request HEADERS list is recycled as the response's (EchoServer), so once warm neither
  // the codec nor the peer's writer allocates.
  trellis::testing::AllocationScope scope;
  for (int i = 0; i < 1000; ++i) one();
  const auto allocations = scope.count();
  REQUIRE(trellis::testing::allocation_hook_installed());
  // Under ASan the box caches are off: the request's and the response's Message boxes (the
  // HEADERS frame and the bytes written) are then the two allocations per request.
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(allocations == 0);
#else
  CHECK(allocations <= 2 * 1000);
#endif
  CHECK(server->active_streams() == 0);
  CHECK(server->last_peer_stream_id() == 2199);
}
