// HttpParser: the strict, incremental HTTP/1.1 message parser (RFC 9112) under the request and
// response decoders. It takes bytes from a cumulation ByteBuf and returns one event at a time:
// a head, body pieces (zero-copy slices of the input) and the last piece with trailers. Bad input
// throws HttpParseError carrying the status a server should answer with; it never guesses
// (no request smuggling), never loops and never buffers past its limits.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/http/http_message.hpp>

namespace trellis::http {

/// The limits an HttpParser enforces, each with the status of the HttpParseError it throws
/// beyond the limit.
struct HttpParserLimits {
  std::size_t max_initial_line_length = 4096;  ///< request line: 414 beyond
  std::size_t max_header_size = 8192;          ///< the field lines of a head or trailer: 431 beyond
  std::size_t max_header_count = 100;          ///< 431 beyond
  std::uint64_t max_chunk_size = 16u << 20;    ///< one chunk of a chunked body: 413 beyond
  std::size_t max_chunk_extension_length = 1024;  ///< the extensions of one chunk: 400 beyond
  /// The chunk extensions of one message together: 400 beyond. They carry nothing the server uses
  /// (they are checked and dropped), so a sender of tiny chunks with long extensions costs parse
  /// time for no body: this caps that at a bounded amount per message.
  std::size_t max_chunk_extensions_per_message = 64 * 1024;
  std::uint64_t max_content_length = std::numeric_limits<std::int64_t>::max();  ///< 413 beyond
};

/// Malformed or over-limit input. status() is the response a server sends (400, 413, 414, 431,
/// 501, 505); the connection must close after it.
class HttpParseError : public codec::DecoderError {
 public:
  /// An error answered with status; position is the stream offset of the fault (-1: unknown).
  HttpParseError(std::uint16_t status, const std::string& what, std::int64_t position = -1)
      : codec::DecoderError(what, position), status_(status) {}
  /// The status a server answers with.
  std::uint16_t status() const noexcept { return status_; }

 private:
  std::uint16_t status_;
};

/// The strict, incremental HTTP/1.1 parser of one connection (RFC 9112), under the request and
/// response decoders: it reads from a cumulation buffer and returns one event at a time. Bad
/// input throws HttpParseError. One thread at a time.
class HttpParser {
 public:
  /// Which messages it parses.
  enum class Kind {
    kRequest,  ///< requests (a server)
    kResponse  ///< responses (a client)
  };
  /// What parse() returns: nothing yet (std::monostate), a head, a body piece or the end.
  using Event =
      std::variant<std::monostate, HttpRequest, HttpResponse, HttpContent, LastHttpContent>;

  /// A parser of kind's messages with these limits.
  explicit HttpParser(Kind kind, HttpParserLimits limits = {});

  /// The next event decoded from in (consuming its bytes), or std::monostate when more input is
  /// needed. Throws HttpParseError; after an error the parser stays failed until reset().
  Event parse(ByteBuf& in);
  /// The parts of a request head that parse_request_head fills (those of an HttpRequest or of a
  /// FullHttpRequest, say).
  struct RequestHeadParts {
    HttpMethod& method;    ///< Where the method goes.
    std::string& target;   ///< Where the request-target goes.
    HttpVersion& version;  ///< Where the version goes.
    HttpHeaders& headers;  ///< Where the header fields go.
  };
  /// A request parser outside a message (in_message() false): when in holds a whole head, calls
  /// make_parts() (-> RequestHeadParts of empty fields), fills them as parse() would have filled
  /// its HttpRequest event, and returns true; the body follows as parse() events. Returns false,
  /// without calling make_parts, while more input is needed. So a decoder can build the request
  /// where it will travel (in its Message) instead of moving it there. Throws HttpParseError like
  /// parse() (possibly after make_parts, with the parts partly filled).
  template <class MakeParts>
  bool parse_request_head(ByteBuf& in, MakeParts&& make_parts) {
    if (at_fresh_start()) {
      QuickHead quick;  // not initialised: walk_request_head fills what it returns true for
      if (walk_request_head(in, quick)) {
        fill_request_head(in, quick, make_parts());
        return true;
      }
    }
    const HeadScan scan = scan_message_start(in);
    if (scan.length == 0) return false;
    parse_request_head_into(in, scan, make_parts());
    return true;
  }
  /// The input ended. Completes a response body delimited by the connection close; throws
  /// HttpParseError when a message was cut short. Returns std::monostate when nothing was pending.
  Event finish(ByteBuf& in);

  /// Response side: the next response answers a request that has no response body (HEAD) or
  /// CONNECT. The client codec calls it before each response.
  void set_next_response_bodyless(bool bodyless) noexcept { next_bodyless_ = bodyless; }
  /// True between the first byte of a message and its last event.
  bool in_message() const noexcept { return state_ != State::kStart; }
  /// Right after a head whose message has no body (no Content-Length or a zero one, not chunked):
  /// the next event would be an empty LastHttpContent. skip_empty_body() ends the message without
  /// it.
  bool at_empty_body() const noexcept { return state_ == State::kFixedBody && remaining_ == 0; }
  /// Ends a message at_empty_body() without its empty LastHttpContent (else does nothing).
  void skip_empty_body() noexcept {
    if (at_empty_body()) state_ = State::kStart;
  }
  /// Back to the start of a message, clearing a failure.
  void reset() noexcept;
  /// The limits it enforces.
  const HttpParserLimits& limits() const noexcept { return limits_; }

 private:
  friend struct HttpParserTestPeer;  // the tests call walk_request_head directly

  enum class State {
    kStart,
    kFixedBody,
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailers,
    kUntilClose,
    kFailed
  };

  // Where a complete head (or trailer section) ends, as found by scan_head.
  struct HeadScan {
    std::size_t length = 0;          // including the blank line; 0 while more input is needed
    std::size_t first_line_end = 0;  // after the CRLF of the first line (heads only)
    std::size_t lines = 0;           // lines before the blank line
  };
  // Finds the end of a head (or trailer section), resuming at scan_pos_, and enforces the line
  // syntax (CRLF only) and the size and count limits on the way (http_parser_scan.cpp).
  HeadScan scan_head(const ByteBuf& in, bool trailers);
  bool scan_window(const char* p, std::size_t n, std::size_t window, std::size_t& i, bool trailers,
                   HeadScan& head);
  bool scan_bytes(const char* p, std::size_t n, std::size_t end, std::size_t& i, bool trailers,
                  HeadScan& head);
  bool end_line(std::size_t lf, bool trailers, HeadScan& head);
  [[noreturn]] void fail_field_count();  // out of line: keeps end_line small enough to inline
  // At a message start: skips the empty lines allowed before it and scans for the end of its
  // head (length 0 while more input is needed).
  HeadScan scan_message_start(ByteBuf& in);

  // The one-pass parse of a request head that is whole in the input (http_parser_quick.cpp):
  // a head the rules accept, found in one walk over its bytes, with no scan before the parse.
  // Anything else (a head cut short, near a limit, with many fields, malformed) is left to the
  // scan and parse above, which then decide as they always did.
  static constexpr std::size_t kQuickFields = 24;
  struct QuickField {
    std::uint32_t name;  // offsets from the start of the field block
    std::uint32_t value;
    std::uint32_t value_length;
    std::uint16_t name_length;
    HeaderId id;
  };
  struct QuickHead {
    std::size_t method_end;      // the SP after the method
    std::size_t target_end;      // the SP after the target
    std::size_t first_line_end;  // after its CRLF
    std::size_t length;          // including the blank line
    std::size_t fields;
    HttpVersion version;
    bool get;
    QuickField field[kQuickFields];
  };
  // Outside a message, with nothing of the next head scanned yet.
  bool at_fresh_start() const noexcept {
    return state_ == State::kStart && scan_pos_ == 0 && lines_ == 0;
  }
  // True when in starts with a whole request head that the scan and parse would accept, then
  // described in head; false (head partly written) for anything else. Throws nothing.
  bool walk_request_head(const ByteBuf& in, QuickHead& head) const noexcept;
  // Fills parts from a head walk_request_head accepted, frames its body, consumes it.
  void fill_request_head(ByteBuf& in, const QuickHead& head, RequestHeadParts parts);
  Event parse_head(ByteBuf& in, const HeadScan& scan);
  void parse_request_head_into(ByteBuf& in, const HeadScan& scan, RequestHeadParts parts);
  // readable: how many bytes from line.data() may be read (at least line.size()).
  void parse_request_line(std::string_view line, std::size_t readable, RequestHeadParts& parts);
  void parse_status_line(std::string_view line, HttpResponse& response);
  HttpVersion parse_version(std::string_view text);
  // block: field lines, each ending in CRLF; fields: how many lines it holds; readable: how many
  // bytes from block.data() may be read (0: block.size()).
  void parse_fields(std::string_view block, std::size_t fields, HttpHeaders& headers,
                    std::size_t readable = 0);
  // The detailed error of a bad request line or field line (the slow path); always throws.
  [[noreturn]] void reject_request_line(std::string_view line);
  [[noreturn]] void reject_field_line(std::string_view rest);
  // The fields that decide how a body is framed, counted in one pass over the ids.
  struct FramingFields {
    std::size_t hosts = 0;
    std::size_t host = 0;  // the index of the (last) Host field
    bool has_te = false;
    bool has_cl = false;
  };
  static FramingFields framing_fields(const HttpHeaders& headers) noexcept;
  void frame_request_body(HttpVersion version, const HttpHeaders& headers);
  void frame_response_body(const HttpResponse& response);
  void frame_body(const HttpHeaders& headers, const FramingFields& framing, bool request);
  Event parse_chunk_size(ByteBuf& in);
  Event body_piece(ByteBuf& in, std::uint64_t available_limit, bool completes_message);
  [[noreturn]] void fail(std::uint16_t status, const std::string& what);

  Kind kind_;
  HttpParserLimits limits_;
  State state_ = State::kStart;
  bool next_bodyless_ = false;
  std::uint64_t remaining_ = 0;      // bytes left of a fixed body or of the current chunk
  std::size_t extension_bytes_ = 0;  // chunk extensions seen in the current message
  std::size_t scan_pos_ = 0;         // how far scan_head got (relative to the reader index)
  std::size_t line_start_ = 0;
  std::size_t first_line_end_ = 0;
  std::size_t lines_ = 0;
  std::int64_t consumed_ = 0;  // stream offset of the reader index, for error positions
  // The last Host value found valid on this connection (requests only; none: SIZE_MAX).
  std::size_t valid_host_size_ = SIZE_MAX;
  char valid_host_[48];
};

}  // namespace trellis::http
