// Umbrella header of trellis::transport: Asio event loops, socket channels and bootstraps.
#pragma once

#include <trellis/pipeline.hpp>
#include <trellis/transport/event_loop.hpp>
#include <trellis/transport/event_loop_group.hpp>
