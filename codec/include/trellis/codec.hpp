// Umbrella header of trellis::codec: decoder framework and frame codecs.
#pragma once

#include <trellis/codec/decoder_error.hpp>
