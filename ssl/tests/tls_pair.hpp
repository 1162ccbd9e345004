// Two EmbeddedChannels, a TLS client and a TLS server, wired back to back: pump() moves each
// one's outbound ciphertext to the other's inbound until both are quiet.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/ssl/ssl_handler.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace trellis::ssl::testing {

struct TlsPair {
  TlsPair(const SslContext& client_ctx, const SslContext& server_ctx,
          std::string server_name = "localhost")
      : client_ssl(std::make_shared<SslHandler>(client_ctx, std::move(server_name))),
        server_ssl(std::make_shared<SslHandler>(server_ctx)),
        server(EmbeddedChannel::create(server_ssl)),
        client(EmbeddedChannel::create(client_ssl)) {}
  // A client talking to a server channel the test built (its SslHandler and what follows it).
  TlsPair(std::shared_ptr<SslHandler> client_handler, std::shared_ptr<SslHandler> server_handler,
          std::shared_ptr<EmbeddedChannel> server_channel)
      : client_ssl(std::move(client_handler)),
        server_ssl(std::move(server_handler)),
        server(std::move(server_channel)),
        client(EmbeddedChannel::create(client_ssl)) {}
  // A pair of handlers made (and set up, e.g. a session to offer) by the test.
  TlsPair(std::shared_ptr<SslHandler> client_handler, std::shared_ptr<SslHandler> server_handler)
      : client_ssl(std::move(client_handler)),
        server_ssl(std::move(server_handler)),
        server(EmbeddedChannel::create(server_ssl)),
        client(EmbeddedChannel::create(client_ssl)) {}

  // Delivers one side's ciphertext to the other until nothing moves. Exceptions that reach a
  // tail are collected (see errors), not thrown.
  void pump() {
    for (int round = 0; round < 1000; ++round) {
      const bool a = move(*client, *server, server_errors);
      const bool b = move(*server, *client, client_errors);
      if (!a && !b) return;
    }
    throw std::runtime_error("TLS pair did not settle");
  }

  // Every ciphertext message one side wrote, merged into one buffer (one "read" of the peer).
  static ByteBuf take_outbound(EmbeddedChannel& from) {
    ByteBuf all = ByteBufAllocator::default_allocator().buffer(256);
    while (auto m = from.read_outbound<ByteBuf>()) all.write_bytes(*m);
    return all;
  }

  // All plaintext that reached a side's tail, concatenated.
  static std::string read_all(EmbeddedChannel& ch) {
    std::string s;
    while (auto m = ch.read_inbound<ByteBuf>()) {
      auto span = m->readable_span();
      s.append(reinterpret_cast<const char*>(span.data()), span.size());
    }
    return s;
  }

  std::shared_ptr<SslHandler> client_ssl;
  std::shared_ptr<SslHandler> server_ssl;
  std::shared_ptr<EmbeddedChannel> server;
  std::shared_ptr<EmbeddedChannel> client;
  std::vector<std::exception_ptr> client_errors;
  std::vector<std::exception_ptr> server_errors;

 private:
  static bool move(EmbeddedChannel& from, EmbeddedChannel& to,
                   std::vector<std::exception_ptr>& errors) {
    bool moved = false;
    while (auto m = from.read_outbound()) {
      moved = true;
      if (!to.is_open()) continue;  // the peer is gone: bytes are dropped
      try {
        to.write_inbound(std::move(*m));
      } catch (...) {
        errors.push_back(std::current_exception());
      }
    }
    return moved;
  }
};

}  // namespace trellis::ssl::testing
