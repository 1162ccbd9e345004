// async_chat_server: chat_server written as coroutines. The pipeline is the same up to the
// string codec; then each connection is an AsyncChannel<std::string, std::string> served by a
// task on its own loop, and a ChannelGroup is the room. See docs/tutorial.md.
//
//   async_chat_server [--host H] [--port P] [--threads N] [--idle-seconds S]
//                     (default 127.0.0.1:8023, 1 thread, 300 s)
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <trellis/transport.hpp>

#include "chat_handler.hpp"
#include "chat_initializer.hpp"
#include "example_main.hpp"

using namespace trellis;
using namespace examples;

using ChatChannel = AsyncChannel<std::string, std::string>;

// One connection, on its own loop: greeted, announced, then each line goes to the others.
Task<void> chat(ChatChannel::Inbound& in, ChatChannel::Outbound& out, ChannelGroup& room,
                Channel& ch) {
  const std::string name = peer_name(ch);
  const std::size_t others = room.size();
  room.add(ch);  // it leaves the room by itself when it closes
  room.write_and_flush(joined_line(name), channel_matchers::is_not(ch));
  co_await out.write(welcome_line(name, others));
  for (;;) {
    std::optional<std::string> line;
    bool too_long = false;
    try {
      line = co_await in.next();
    } catch (const codec::TooLongFrameError&) {
      too_long = true;  // the decoder skipped that line and goes on
    }
    if (too_long) {
      co_await out.write(too_long_line());
      continue;
    }
    if (!line) break;  // the client left, or the idle handler closed the channel
    if (!line->empty()) room.write_and_flush(said_line(name, *line), channel_matchers::is_not(ch));
  }
}

// Runs chat() and closes the channel, then tells the others.
Task<void> serve(ChatChannel channel, ChannelGroup& room) {
  Channel& ch = channel.channel();
  const std::string name = peer_name(ch);
  const ChannelMatcher others = channel_matchers::is_not(ch);
  try {
    co_await channel.execute_then_close([&](ChatChannel::Inbound& in, ChatChannel::Outbound& out) {
      return chat(in, out, room, ch);
    });
  } catch (const std::exception&) {
    // A reset or a failed write ends this connection only.
  }
  room.write_and_flush(left_line(name), others);
}

// On the server channel's loop: hands each accepted connection to a task on the child's loop.
Task<void> accept_loop(AsyncServerChannel<std::string, std::string>& server, ChannelGroup& room) {
  while (auto child = co_await server.accept()) {
    EventExecutor& loop = child->event_loop();
    loop.spawn(serve(std::move(*child), room));
  }
}

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8023;
  std::size_t threads = 1;
  int idle_seconds = 300;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host},
                             {"--port", &port},
                             {"--threads", &threads},
                             {"--idle-seconds", &idle_seconds}},
                            "async_chat_server [--host H] [--port P] [--threads N] "
                            "[--idle-seconds S]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals

  ChannelGroup room("chat");  // outlives the loops, which run the tasks that use it
  limit_backlog(room);        // a client that never reads is disconnected
  EventLoopGroup group(threads);
  // No chat handler: the pipeline ends with the string codec, where the AsyncChannel reads.
  auto init = std::make_shared<ChatInitializer>(std::chrono::seconds(idle_seconds), nullptr);
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(init)
                   .bind_async<std::string, std::string>(host, port);
  std::optional<AsyncServerChannel<std::string, std::string>> server =
      examples::bind_or_report(std::move(bound), "async_chat_server");
  if (!server) return 1;
  std::cout << "async_chat_server listening on " << server->local_address()->to_string()
            << std::endl;
  Future<void> accepting = server->event_loop().spawn(accept_loop(*server, room));

  // Ctrl-C or SIGTERM: close the listening channel (the accept loop ends), then every client.
  stop.wait();
  server->close().wait();
  accepting.wait();
  room.close().wait();
  return 0;
}
