// Umbrella header of trellis::testing: the embedded test kit.
#pragma once

#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_event_loop.hpp>
