// Errors raised by decoders on bad input: what went wrong and where in the stream.
#pragma once

#include <cstdint>
#include <string>

#include <trellis/pipeline/error.hpp>

namespace trellis::codec {

/// A decoder met input it cannot decode. position() is the stream offset (or -1 when unknown).
class DecoderError : public Error {
 public:
  explicit DecoderError(const std::string& what, std::int64_t position = -1);
  std::int64_t position() const noexcept { return position_; }

 private:
  std::int64_t position_;
};

/// A frame (line, length-prefixed frame, header block...) exceeds the decoder's limit.
class TooLongFrameError : public DecoderError {
 public:
  using DecoderError::DecoderError;
};

/// An encoder was handed a message it cannot encode.
class EncoderError : public Error {
 public:
  using Error::Error;
};

}  // namespace trellis::codec
