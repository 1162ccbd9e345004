// EchoHandler: the plain TCP echo server handler, shared by the socket transport tests
// (tcp_test_support.hpp) and the echo benchmark (benchmarks/bench_tcp_echo.cpp).
#pragma once

#include <exception>
#include <utility>

#include <trellis/transport.hpp>

namespace trellis::test {

// Writes back whatever it reads; flushes once per read batch; closes on an error.
class EchoHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override { ctx.write(std::move(msg)); }
  void channel_read_complete(ChannelHandlerContext& ctx) override { ctx.flush(); }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }
};

}  // namespace trellis::test
