#include <doctest/doctest.h>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <string>
#include <vector>

#include <trellis/pipeline/promise.hpp>
#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>
#include <trellis/ssl/ssl_handler.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include "test_pki.hpp"
#include "tls_pair.hpp"

using namespace trellis;
using namespace trellis::ssl;
using trellis::ssl::testing::test_pki;
using trellis::ssl::testing::TlsPair;

namespace {

SslContext server_context() {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
}

SslContext client_context() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return s;
}

template <class E>
bool holds(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

// The SslHandshakeError a failed handshake future holds.
SslHandshakeError handshake_failure(const Future<void>& f) {
  REQUIRE(f.is_done());
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const SslHandshakeError& e) {
    return e;
  }
}

}  // namespace

TEST_CASE("a client and a server handshake over embedded channels and exchange data both ways") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  CHECK(pair.client_ssl->protocol_version() == "TLSv1.3");

  pair.client->write_outbound(ByteBuf::from("ping"));
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == "ping");

  const std::string big = pattern(100 * 1024 + 17);  // several records
  pair.server->write_outbound(ByteBuf::from(big));
  pair.pump();
  CHECK(TlsPair::read_all(*pair.client) == big);

  const std::string big2 = pattern(40000);
  pair.client->write_outbound(ByteBuf::from(big2));
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == big2);
  CHECK(pair.client_errors.empty());
  CHECK(pair.server_errors.empty());
}

TEST_CASE("close sends close_notify, the peer answers and closes without an error") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  Promise<void> closed;
  pair.client->close(ChannelPromise(closed));
  // close_notify left the client before the channel closed.
  CHECK(closed.future().is_done());
  CHECK_FALSE(pair.client->is_open());
  REQUIRE(pair.client->outbound_messages().size() >= 1);
  pair.pump();
  CHECK_FALSE(pair.server->is_open());
  CHECK(pair.server->exceptions().empty());
  CHECK(pair.server_errors.empty());
  CHECK(pair.client->exceptions().empty());
}

TEST_CASE("a second close while close_notify is still being written waits for it") {
  // As an HTTP server ends a connection after its last response: two handlers each close once
  // the response was written, and both closes run while the transport is still writing it.
  TlsPair pair(client_context(), server_context());
  pair.pump();
  ChannelPromise written = pair.server->new_promise();
  Promise<void> second;
  written.future().add_listener([&](const Future<void>&) {
    pair.server->close();
    pair.server->close(ChannelPromise(second));
  });
  pair.server->write_and_flush(ByteBuf::from("bye"), written);
  CHECK(second.future().is_done());
  CHECK_FALSE(pair.server->is_open());
  pair.pump();
  CHECK(TlsPair::read_all(*pair.client) == "bye");
  // The client got close_notify: no truncation, and it closed in answer.
  CHECK(pair.client->exceptions().empty());
  CHECK(pair.client_errors.empty());
  CHECK_FALSE(pair.client->is_open());
}

TEST_CASE("writes issued before the handshake completes are sent after it, promises then") {
  TlsPair pair(client_context(), server_context());
  Promise<void> written;
  pair.client->write(ByteBuf::from("early "), ChannelPromise(written));
  pair.client->write_and_flush(ByteBuf::from("bird"));
  CHECK_FALSE(written.future().is_done());
  pair.pump();
  CHECK(written.future().is_success());
  CHECK(TlsPair::read_all(*pair.server) == "early bird");
}

TEST_CASE("writes flushed together go out in one record; each record read comes out as a message") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  for (int i = 0; i < 10; ++i) pair.client->write(ByteBuf::from("0123456789"));
  pair.client->flush();
  ByteBuf one_flush = TlsPair::take_outbound(*pair.client);
  pair.server->write_inbound(std::move(one_flush));
  // One record: one plaintext message with all 100 bytes.
  REQUIRE(pair.server->inbound_messages().size() == 1);
  std::string expected;
  for (int i = 0; i < 10; ++i) expected += "0123456789";
  CHECK(TlsPair::read_all(*pair.server) == expected);

  // Three flushes are three records; delivered in one read, they are three messages.
  pair.client->write_and_flush(ByteBuf::from("a"));
  pair.client->write_and_flush(ByteBuf::from("b"));
  pair.client->write_and_flush(ByteBuf::from("c"));
  pair.server->write_inbound(TlsPair::take_outbound(*pair.client));
  CHECK(pair.server->inbound_messages().size() == 3);
  CHECK(TlsPair::read_all(*pair.server) == "abc");
}

TEST_CASE("small writes flushed together fill records of 16 KiB, the rest goes in one more") {
  // As pipelined HTTP responses answered in one flush: 100 writes of 300 bytes are two records
  // (16,384 and 13,616 bytes of plaintext), not one record per write.
  TlsPair pair(client_context(), server_context());
  pair.pump();
  const std::string piece = pattern(300);
  for (int i = 0; i < 100; ++i) pair.server->write(ByteBuf::from(piece));
  pair.server->flush();
  pair.client->write_inbound(TlsPair::take_outbound(*pair.server));
  std::vector<std::size_t> records;
  std::string all;
  while (auto m = pair.client->read_inbound<ByteBuf>()) {
    records.push_back(m->readable_bytes());
    const auto span = m->readable_span();
    all.append(reinterpret_cast<const char*>(span.data()), span.size());
  }
  CHECK(records == std::vector<std::size_t>{16384, 30000 - 16384});
  std::string expected;
  for (int i = 0; i < 100; ++i) expected += piece;
  CHECK(all == expected);
}

TEST_CASE("a write's promise completes when the ciphertext carrying it was written") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  pair.client->set_writable(false);  // the peer stops reading: flushed ciphertext stays queued
  Promise<void> a;
  Promise<void> b;
  pair.client->write(ByteBuf::from("first"), ChannelPromise(a));
  pair.client->write(ByteBuf::from("second"), ChannelPromise(b));
  pair.client->flush();
  CHECK_FALSE(a.future().is_done());
  CHECK_FALSE(b.future().is_done());
  pair.client->set_writable(true);
  CHECK(a.future().is_success());
  CHECK(b.future().is_success());
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == "firstsecond");
}

TEST_CASE("a write that is not bytes fails its promise") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  Promise<void> p;
  pair.client->write(Message(42), ChannelPromise(p));
  REQUIRE(p.future().is_done());
  CHECK(holds<WrongTypeError>(p.future().cause()));
}

TEST_CASE("ALPN negotiates the server's preferred protocol among the client's") {
  auto client = SslContextBuilder::for_client()
                    .trust_ca_file(test_pki().ca_cert)
                    .alpn({"h2", "http/1.1"})
                    .build();
  auto server = SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
                    .alpn({"http/1.1"})
                    .build();
  TlsPair pair(client, server);
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.client_ssl->alpn_protocol() == "http/1.1");
  CHECK(pair.server_ssl->alpn_protocol() == "http/1.1");
}

TEST_CASE("a certificate for another hostname is refused with the verify result") {
  TlsPair pair(client_context(), server_context(), "wrong.example");
  pair.pump();
  const SslHandshakeError e = handshake_failure(pair.client_ssl->handshake_future());
  CHECK(e.verify_result() == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(std::string(e.what()).find("certificate verify failed") != std::string::npos);
  CHECK_FALSE(pair.client->is_open());
  CHECK_FALSE(pair.server->is_open());  // the client's alert ended the server's handshake
  CHECK(pair.server_ssl->handshake_future().is_done());
  CHECK_FALSE(pair.server_ssl->handshake_future().is_success());
}

TEST_CASE("a certificate from an untrusted CA is refused") {
  auto server =
      SslContextBuilder::for_server(test_pki().untrusted_cert, test_pki().untrusted_key).build();
  TlsPair pair(client_context(), server);
  pair.pump();
  const SslHandshakeError e = handshake_failure(pair.client_ssl->handshake_future());
  CHECK(e.verify_result() == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  CHECK_FALSE(pair.client_errors.empty());
}

TEST_CASE("an expired certificate is refused") {
  auto server =
      SslContextBuilder::for_server(test_pki().expired_cert, test_pki().expired_key).build();
  TlsPair pair(client_context(), server);
  pair.pump();
  const SslHandshakeError e = handshake_failure(pair.client_ssl->handshake_future());
  CHECK(e.verify_result() == X509_V_ERR_CERT_HAS_EXPIRED);
  CHECK(e.verify_result_text() == "certificate has expired");
}

TEST_CASE("verify_peer(false) accepts a certificate from an untrusted CA") {
  auto server =
      SslContextBuilder::for_server(test_pki().untrusted_cert, test_pki().untrusted_key).build();
  auto client = SslContextBuilder::for_client().verify_peer(false).build();
  TlsPair pair(client, server);
  pair.pump();
  CHECK(pair.client_ssl->handshake_future().is_success());
}

TEST_CASE("garbage instead of a ClientHello fails the handshake and closes the channel") {
  auto handler = std::make_shared<SslHandler>(server_context());
  auto ch = EmbeddedChannel::create(handler);
  CHECK_THROWS_AS(ch->write_inbound(ByteBuf::from("GET / HTTP/1.1\r\nHost: x\r\n\r\n")),
                  SslHandshakeError);
  CHECK_FALSE(ch->is_open());
  const SslHandshakeError e = handshake_failure(handler->handshake_future());
  CHECK(e.verify_result() == 0);
  CHECK(std::string(e.what()).find("TLS handshake failed") != std::string::npos);
}

TEST_CASE("a peer that closes without close_notify is reported as a truncation") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  // The client's connection ended without close_notify.
  CHECK_THROWS_AS(pair.server->shutdown_input(), SslTruncationError);
  CHECK_FALSE(pair.server->is_open());
  REQUIRE(pair.server->exceptions().size() == 1);
  CHECK(holds<SslTruncationError>(pair.server->exceptions().front()));
}

TEST_CASE("a connection that closes during the handshake fails the handshake future") {
  TlsPair pair(client_context(), server_context());
  pair.client->close();
  const SslHandshakeError e = handshake_failure(pair.client_ssl->handshake_future());
  CHECK(std::string(e.what()).find("closed before") != std::string::npos);
}

TEST_CASE("a second connection resumes the session of the first") {
  const SslContext client = client_context();
  const SslContext server = server_context();
  {
    TlsPair first(client, server);
    first.pump();
    REQUIRE(first.client_ssl->handshake_future().is_success());
    CHECK_FALSE(first.client_ssl->is_session_reused());
  }
  CHECK(client.cached_sessions() == 1);
  TlsPair second(client, server);
  second.pump();
  REQUIRE(second.client_ssl->handshake_future().is_success());
  CHECK(second.client_ssl->is_session_reused());
  CHECK(second.server_ssl->is_session_reused());
  second.client->write_outbound(ByteBuf::from("resumed"));
  second.pump();
  CHECK(TlsPair::read_all(*second.server) == "resumed");
}

TEST_CASE("SNI: the server's callback picks the context for the requested name") {
  const SslContext alt =
      SslContextBuilder::for_server(test_pki().alt_cert, test_pki().alt_key).build();
  std::string asked;
  const SslContext server =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
          .sni([&](std::string_view name) -> std::optional<SslContext> {
            asked = name;
            if (name == "alt.example") return alt;
            return std::nullopt;
          })
          .build();
  TlsPair pair(client_context(), server, "alt.example");  // verified against alt.example
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(asked == "alt.example");
  CHECK(pair.server_ssl->requested_server_name() == "alt.example");

  TlsPair plain(client_context(), server, "localhost");
  plain.pump();
  CHECK(plain.client_ssl->handshake_future().is_success());
  CHECK(asked == "localhost");
}

TEST_CASE("a steady exchange of messages allocates nothing per message") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  auto round_trip = [&] {
    pair.client->write_outbound(ByteBuf::from("ping"));
    while (auto m = pair.client->read_outbound()) pair.server->write_inbound(std::move(*m));
    auto in = pair.server->read_inbound<ByteBuf>();
    REQUIRE(in);
    pair.server->write_outbound(std::move(*in));
    while (auto m = pair.server->read_outbound()) pair.client->write_inbound(std::move(*m));
    REQUIRE(pair.client->read_inbound<ByteBuf>());
  };
  for (int i = 0; i < 20; ++i) round_trip();  // warm-up: queues and caches reach their size
  trellis::testing::AllocationScope allocations;
  for (int i = 0; i < 100; ++i) round_trip();
  CHECK(allocations.count() == 0);
}

TEST_CASE("renegotiation is refused") {
  // A TLS 1.2 client of raw OpenSSL (trellis's own client refuses to renegotiate at all).
  const SslContext server = server_context();
  SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_max_proto_version(client_ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, nullptr);
  SSL* client = SSL_new(client_ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in, -1);
  SSL_set_bio(client, in, out);
  SSL_set_connect_state(client);

  auto handler = std::make_shared<SslHandler>(server);
  auto ch = EmbeddedChannel::create(handler);
  auto exchange = [&] {
    for (int i = 0; i < 10; ++i) {
      char buf[16384];
      const int n = BIO_read(out, buf, sizeof buf);
      if (n > 0) {
        try {
          ch->write_inbound(ByteBuf::from(std::string_view(buf, static_cast<std::size_t>(n))));
        } catch (...) {
        }
      }
      while (auto m = ch->read_outbound<ByteBuf>()) {
        const auto span = m->readable_span();
        BIO_write(in, span.data(), static_cast<int>(span.size()));
      }
      if (n <= 0) return;
    }
  };
  for (int i = 0; i < 5 && SSL_do_handshake(client) != 1; ++i) exchange();
  exchange();
  REQUIRE(handler->handshake_future().is_success());
  CHECK(handler->protocol_version() == "TLSv1.2");

  REQUIRE(SSL_renegotiate(client) == 1);
  SSL_do_handshake(client);  // sends a ClientHello on the established connection
  exchange();
  char buf[64];
  std::size_t n = 0;
  const int r = SSL_read_ex(client, buf, sizeof buf, &n);  // reads the server's answer
  CHECK(r == 0);
  CHECK(SSL_renegotiate_pending(client) == 1);  // never completed
  CHECK(handler->is_handshake_done());          // the server did not start a new handshake
  SSL_free(client);
  SSL_CTX_free(client_ctx);
}

TEST_CASE("a client handler without a server name is refused while its context checks hostnames") {
  // Failing open (no hostname check at all) would accept any certificate the CA ever signed.
  CHECK_THROWS_WITH_AS(std::make_shared<SslHandler>(client_context()),
                       doctest::Contains("server name"), SslError);
  CHECK_THROWS_WITH_AS(std::make_shared<SslHandler>(client_context(), ""),
                       doctest::Contains("verify_hostname"), SslError);
  // A client that really wants no hostname check says so in its context.
  const SslContext no_hostname = SslContextBuilder::for_client()
                                     .trust_ca_file(test_pki().ca_cert)
                                     .verify_hostname(false)
                                     .build();
  TlsPair pair(no_hostname, server_context(), "");
  pair.pump();
  CHECK(pair.client_ssl->handshake_future().is_success());
  // Without peer verification there is no hostname to check either; servers take no name.
  CHECK_NOTHROW(
      std::make_shared<SslHandler>(SslContextBuilder::for_client().verify_peer(false).build()));
  CHECK_NOTHROW(std::make_shared<SslHandler>(server_context()));
}
