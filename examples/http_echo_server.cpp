// HTTP/1.1 echo server: GET /plaintext says hello, a request with a body gets its body back,
// any other request gets its request line and headers back (see http_echo_handler.hpp).
//
//   http_echo_server [--host H] [--port P] [--threads N]     (default 127.0.0.1:8080)
//                    [--header-timeout-ms N] [--body-timeout-ms N] [--idle-timeout-ms N]
//                    [--tls-cert FILE --tls-key FILE] [--compress]
//
// The timeouts bound how long a client may take over a request head (default 30 s), leave a
// request body without sending (60 s) and keep an idle connection (60 s); 0 turns one off.
// With --tls-cert (a PEM chain, leaf first) and --tls-key it serves HTTPS (TLS 1.2 and 1.3, ALPN
// http/1.1) with the same contract. --compress compresses response bodies (br, zstd, gzip or
// deflate, as the request's Accept-Encoding allows; see HttpContentCompressor). --port 0 picks a
// free port; the "listening on" line tells which. SIGINT/SIGTERM stop it.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <trellis/ssl.hpp>
#include <trellis/transport.hpp>

#include "http_echo_handler.hpp"

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 8080;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  trellis::http::HttpServerTimeouts timeouts;
  std::string tls_cert;
  std::string tls_key;
  bool compress = false;
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s [--host H] [--port P] [--threads N] [--header-timeout-ms N] "
                 "[--body-timeout-ms N] [--idle-timeout-ms N] [--tls-cert FILE --tls-key FILE] "
                 "[--compress]\n",
                 argv[0]);
    return 2;
  };
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--compress") {  // the one flag without a value
      compress = true;
      i -= 1;
      continue;
    }
    if (i + 1 >= argc) return usage();  // every flag takes a value
    char* end = nullptr;
    const long number = std::strtol(argv[i + 1], &end, 10);
    const bool numeric = end != argv[i + 1] && *end == '\0' && number >= 0;
    const bool text_flag = flag == "--host" || flag == "--tls-cert" || flag == "--tls-key";
    if (!text_flag && !numeric) return usage();
    if (flag == "--host") {
      host = argv[i + 1];
    } else if (flag == "--tls-cert") {
      tls_cert = argv[i + 1];
    } else if (flag == "--tls-key") {
      tls_key = argv[i + 1];
    } else if (flag == "--port") {
      port = std::atoi(argv[i + 1]);
    } else if (flag == "--threads") {
      threads = static_cast<unsigned>(std::max(1, std::atoi(argv[i + 1])));
    } else if (flag == "--header-timeout-ms") {
      timeouts.header_timeout = std::chrono::milliseconds(number);
    } else if (flag == "--body-timeout-ms") {
      timeouts.body_timeout = std::chrono::milliseconds(number);
    } else if (flag == "--idle-timeout-ms") {
      timeouts.idle_timeout = std::chrono::milliseconds(number);
    } else {
      return usage();
    }
  }

  if (tls_cert.empty() != tls_key.empty()) return usage();
  std::optional<trellis::ssl::SslContext> tls;
  if (!tls_cert.empty()) {
    try {
      tls =
          trellis::ssl::SslContextBuilder::for_server(tls_cert, tls_key).alpn({"http/1.1"}).build();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "http_echo_server: %s\n", e.what());
      return 1;
    }
  }

  // Block the stop signals in every thread (the loops inherit the mask); main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  trellis::EventLoopGroup acceptor(1);
  trellis::EventLoopGroup workers(threads);
  trellis::ServerBootstrap bootstrap;
  bootstrap.group(acceptor, workers)
      .channel<trellis::ServerSocketChannel>()
      .option(trellis::channel_option::so_reuseaddr, true)
      .child_handler(
          trellis::ChannelInitializer::from([timeouts, tls, compress](trellis::Channel& ch) {
            if (tls)
              ch.pipeline().add_last("tls", std::make_shared<trellis::ssl::SslHandler>(*tls));
            examples::init_http_echo_pipeline(ch, 1 << 20, timeouts);
            if (compress) {
              ch.pipeline().add_after("keep-alive", "compressor",
                                      std::make_shared<trellis::http::HttpContentCompressor>());
            }
          }));

  std::shared_ptr<trellis::Channel> server;
  try {
    server = bootstrap.bind(host, static_cast<std::uint16_t>(port)).get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_echo_server: cannot listen on %s:%d: %s\n", host.c_str(), port,
                 e.what());
    return 1;
  }
  std::printf("http_echo_server listening on %s (%u worker threads%s)\n",
              server->local_address()->to_string().c_str(), threads, tls ? ", TLS" : "");
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::printf("http_echo_server: signal %d, shutting down\n", signal);
  server->close();
  server->close_future().wait();
  workers.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  acceptor.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  return 0;
}
