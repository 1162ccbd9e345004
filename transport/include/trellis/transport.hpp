// Umbrella header of trellis::transport: Asio event loops, socket channels and bootstraps.
#pragma once

#include <trellis/pipeline.hpp>
#include <trellis/transport/async_server_channel.hpp>
#include <trellis/transport/async_server_channel_options.hpp>
#include <trellis/transport/bootstrap.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/datagram_channel.hpp>
#include <trellis/transport/event_loop.hpp>
#include <trellis/transport/event_loop_group.hpp>
#include <trellis/transport/event_loop_options.hpp>
#include <trellis/transport/server_bootstrap.hpp>
#include <trellis/transport/server_socket_channel.hpp>
#include <trellis/transport/socket_channel.hpp>
