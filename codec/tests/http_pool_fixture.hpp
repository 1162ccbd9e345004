// PoolFixture: an HttpConnectionPool whose connector hands out one EmbeddedChannel, on which the
// test plays the server (the tests of the pool, of streaming responses and of pipelining).
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

namespace trellis::testing {

using namespace trellis::http;

// A pool whose connector hands out one EmbeddedChannel (the test plays the server on it); once
// that channel is closed, further connects fail as refused.
struct PoolFixture {
  explicit PoolFixture(HttpClientOptions options = one_connection()) {
    ch->freeze_time();
    pool = std::make_shared<HttpConnectionPool>(
        ch->event_loop(), "server:80", options,
        [this](std::shared_ptr<ChannelHandler> init) -> Future<std::shared_ptr<Channel>> {
          ++connects;
          Promise<std::shared_ptr<Channel>> p(&ch->event_loop());
          if (hold_connect) {
            held = p;
            pending_init = std::move(init);
            return p.future();
          }
          if (!ch->is_open() && fresh_channels) {
            // A new connection: another EmbeddedChannel, run from the same (test) thread.
            auto next = EmbeddedChannel::create();
            next->freeze_time();
            next->pipeline().add_last(std::move(init));
            extra.push_back(next);
            p.set_value(std::shared_ptr<Channel>(next));
            return p.future();
          }
          if (!ch->is_open()) {
            p.set_exception(std::make_exception_ptr(
                IoError(std::make_error_code(std::errc::connection_refused), "connect")));
            return p.future();
          }
          ch->pipeline().add_last(std::move(init));
          p.set_value(std::shared_ptr<Channel>(ch));
          return p.future();
        });
  }
  static HttpClientOptions one_connection() {
    HttpClientOptions o;
    o.max_connections_per_host = 1;
    return o;
  }

  Future<FullHttpResponse> get(std::string target) {
    FullHttpRequest request;
    request.target = std::move(target);
    request.headers.add(header::kHost, "server");
    Promise<FullHttpResponse> promise(&ch->event_loop());
    pool->submit(std::move(request), promise);
    return promise.future();
  }
  // A real connector's future always completes: one still held fails when the test ends.
  ~PoolFixture() {
    pool->close();  // no reconnect from the failure below
    if (held.future().valid() && !held.is_done()) {
      held.try_set_exception(std::make_exception_ptr(ClosedChannelError("test over")));
    }
  }
  std::string sent() { return testing::drain_outbound_bytes(*ch); }
  void answer(const std::string& bytes) { ch->write_inbound(ByteBuf::from(bytes)); }

  std::shared_ptr<EmbeddedChannel> ch = std::make_shared<EmbeddedChannel>();
  std::shared_ptr<HttpConnectionPool> pool;
  int connects = 0;
  // Once ch is closed, connects make new channels (kept in extra) instead of failing.
  bool fresh_channels = false;
  std::vector<std::shared_ptr<EmbeddedChannel>> extra;
  bool hold_connect = false;
  Promise<std::shared_ptr<Channel>> held;
  std::shared_ptr<ChannelHandler> pending_init;
};

// The failure of f as an E, if it failed with one.
template <class E>
std::optional<E> failure_as(const Future<FullHttpResponse>& f) {
  if (!f.is_done() || f.is_success()) return std::nullopt;
  try {
    std::rethrow_exception(f.cause());
  } catch (const E& e) {
    return e;
  } catch (...) {
  }
  return std::nullopt;
}

}  // namespace trellis::testing
