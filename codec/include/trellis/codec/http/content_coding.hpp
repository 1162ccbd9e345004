// HTTP content codings (gzip, deflate, br, zstd): names, and the choice of one from a request's
// Accept-Encoding (RFC 9110 §12.5.3) for HttpContentCompressor.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace trellis::http {

enum class ContentCoding : std::uint8_t { kIdentity, kGzip, kDeflate, kBrotli, kZstd };

/// The token of a coding ("identity", "gzip", "deflate", "br", "zstd").
std::string_view content_coding_name(ContentCoding coding) noexcept;
/// The coding a Content-Encoding value names (case-insensitive; "x-gzip" and "x-deflate" too);
/// nullopt for anything else, a list of several codings included.
std::optional<ContentCoding> parse_content_coding(std::string_view value) noexcept;

/// Which codings a server may pick (a bit per coding).
struct ContentCodings {
  bool br = true;
  bool zstd = true;
  bool gzip = true;
  bool deflate = true;
};

/// The coding to answer with, given the request's Accept-Encoding (nullopt: the header is absent,
/// which gets identity). The enabled coding with the highest q-value wins, ties going to
/// br > zstd > gzip > deflate; "*" gives its q to codings not listed; q=0 refuses a coding.
/// kIdentity when none is acceptable.
ContentCoding select_content_coding(std::optional<std::string_view> accept_encoding,
                                    ContentCodings enabled = {}) noexcept;

}  // namespace trellis::http
