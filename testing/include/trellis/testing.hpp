// Umbrella header of trellis::testing: the embedded test kit.
#pragma once

#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/async_testing_event_loop.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/embedded_channel.hpp>
#include <trellis/testing/embedded_event_loop.hpp>

/// Assertions and helpers for tests of handlers and codecs: the decoder verifier, allocation
/// counting, doctest helpers. EmbeddedChannel and EmbeddedEventLoop are in namespace trellis.
namespace trellis::testing {}
