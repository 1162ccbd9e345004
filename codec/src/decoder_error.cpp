// DecoderError (see decoder_error.hpp).
#include <trellis/codec/decoder_error.hpp>

namespace trellis::codec {

DecoderError::DecoderError(const std::string& what, std::int64_t position)
    : Error(position >= 0 ? what + " (at byte " + std::to_string(position) + ")" : what),
      position_(position) {}

}  // namespace trellis::codec
