// HTTP/1.1 static file server: GET and HEAD of the files under a root directory, with
// Last-Modified / If-Modified-Since, one byte range per request, and the bodies sent with
// sendfile(2) (see file_server_handler.hpp).
//
//   file_server --root DIR [--host H] [--port P] [--threads N] [--send-timeout-ms N]
//
// --port 0 picks a free port; the "listening on" line tells which. --send-timeout-ms bounds
// how long a connection may stay unwritable (a client that stops reading; default 60 s, which
// also bounds a download slower than the file size per minute). SIGINT/SIGTERM stop it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include <trellis/transport.hpp>

#include "example_main.hpp"
#include "file_server_handler.hpp"

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::string root;
  std::uint16_t port = 8080;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  trellis::http::HttpServerTimeouts timeouts;
  const char* usage =
      "file_server --root DIR [--host H] [--port P] [--threads N] [--send-timeout-ms N]";
  if (!examples::read_flags(argc, argv,
                            {{"--root", &root},
                             {"--host", &host},
                             {"--port", &port},
                             {"--threads", &threads},
                             {"--send-timeout-ms", examples::Milliseconds{&timeouts.send_timeout}}},
                            usage)) {
    return 2;
  }
  if (root.empty()) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  threads = std::max(1u, threads);

  std::shared_ptr<examples::FileServerHandler> files;
  try {
    files = std::make_shared<examples::FileServerHandler>(root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "file_server: cannot serve %s: %s\n", root.c_str(), e.what());
    return 1;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  trellis::EventLoopGroup acceptor(1);
  trellis::EventLoopGroup workers(threads);
  trellis::ServerBootstrap bootstrap;
  bootstrap.group(acceptor, workers)
      .channel<trellis::ServerSocketChannel>()
      .option(trellis::channel_option::so_reuseaddr, true)
      .child_handler(trellis::ChannelInitializer::from([files, timeouts](trellis::Channel& ch) {
        examples::init_file_server_pipeline(ch, files, timeouts);
      }));

  std::shared_ptr<trellis::Channel> server =
      examples::bind_or_report(bootstrap.bind(host, port), "file_server");
  if (!server) return 1;
  std::printf("file_server listening on %s (%u worker threads)\n",
              server->local_address()->to_string().c_str(), threads);
  std::fflush(stdout);

  const int signal = stop.wait();
  std::printf("file_server: signal %d, shutting down\n", signal);
  server->close();
  server->close_future().wait();
  workers.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  acceptor.shutdown_gracefully(std::chrono::milliseconds(0), std::chrono::seconds(5)).wait();
  return 0;
}
